"""Free text to safe FTS5 queries: word extraction, quoting, and the ranking plans."""

from __future__ import annotations

from newt.recall.fts_query import (
    MAX_COMMON,
    RARE_DF,
    SearchPlan,
    TermChoice,
    choose_terms,
    plan_search,
    query_terms,
    quote,
)


def test_words_are_folded_deduplicated_and_stripped_of_stop_words() -> None:
    assert query_terms("What is the CODE for the Vellmar depot? code!") == [
        "code",
        "vellmar",
        "depot",
    ]
    assert query_terms("Crème brûlée at Zoë's") == ["creme", "brulee", "zoe"]


def test_fts_syntax_becomes_plain_words() -> None:
    assert query_terms('"foo" AND (bar') == ["foo", "bar"]
    assert query_terms("NEAR(a b) col:x y* ^z -w") == ["near", "b", "col", "x", "y", "z", "w"]
    assert query_terms('* : " ( ) ^ - + {}') == []
    assert query_terms("   \n\t ") == []
    assert query_terms("snake_case") == ["snake", "case"]  # `_` separates, as in unicode61


def test_a_query_of_only_stop_words_keeps_them() -> None:
    assert query_terms("what was it?") == ["what", "was", "it"]


def test_quote_makes_an_fts_string() -> None:
    assert quote("and") == '"and"'
    assert quote('a"b') == '"a""b"'


def test_long_text_keeps_the_longest_words() -> None:
    text = " ".join(f"w{i}" for i in range(200)) + " extraordinarily"
    terms = query_terms(text)
    assert len(terms) == 128
    assert "extraordinarily" in terms


def test_choose_terms_splits_rare_from_common() -> None:
    common_df = RARE_DF + 1
    choice = choose_terms(
        [("code", common_df), ("vellmar", 1), ("depot", 40), ("nowhere", 0)], cap=4000
    )
    assert choice.rare == ["vellmar", "depot"]  # rarest first
    assert choice.common == ["code"]
    assert choice.scored == ["vellmar", "depot", "code"]
    assert not choice.common_dropped


def test_rare_words_are_bounded_by_the_cap() -> None:
    choice = choose_terms([("a", 60), ("b", 50), ("c", 10)], cap=70)
    assert choice.rare == ["c", "b"]  # 10 + 50 fits; adding 60 would pass 70
    assert choice.common == ["a"]


def test_only_the_last_common_words_of_a_long_text_are_kept() -> None:
    words = [(f"w{i}", RARE_DF + 1) for i in range(10)] + [("entity", 1)]
    choice = choose_terms(words, cap=4000)
    assert choice.common == [f"w{i}" for i in range(10 - MAX_COMMON, 10)]
    assert choice.common_dropped
    assert choice.rare == ["entity"]


def test_plans() -> None:
    assert plan_search(TermChoice([], []), small_store=True) == []
    small = plan_search(TermChoice(["a"], ["b"]), small_store=True)
    assert small == [SearchPlan('"a" OR "b"')]
    assert plan_search(TermChoice(["a", "b"], []), small_store=False) == [SearchPlan('"a" OR "b"')]
    assert plan_search(TermChoice(["a"], ["b", "c"]), small_store=False) == [
        SearchPlan('("a") AND ("a" OR "b" OR "c")', correction='"a"')
    ]
    assert plan_search(TermChoice([], ["b", "c"]), small_store=False) == [
        SearchPlan('"b" AND "c"', newest_only=True),
        SearchPlan('"b" OR "c"', newest_only=True),
    ]
    assert plan_search(TermChoice([], ["b"]), small_store=False) == [
        SearchPlan('"b"', newest_only=True)
    ]
