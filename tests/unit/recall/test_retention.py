"""Every packing rule of newt/recall/retention.py, pinned with small hand-made candidates."""

from __future__ import annotations

import copy
import math

import pytest

from newt.config import RecallConfig
from newt.recall import (
    DEFAULT_EXCERPT_TOKENS,
    RetentionCandidate,
    est_tokens,
    recoverability,
    retain_within_budget,
)
from newt.recall.excerpt import select_excerpt
from newt.recall.fts_query import query_terms
from newt.recall.retention import MIN_EXCERPT_TOKENS

LINE_TOKENS = 4  # what a caller's line might cost ("- user: ")


def cand(
    key: str, content: str = "x" * 400, *, age: float = 0.0, hits: int = 0, score: float = 0.0
) -> RetentionCandidate:
    return RetentionCandidate(
        id=key, content=content, access_count=hits, age_hours=age, retrieval_score=score
    )


def test_default_excerpt_tokens() -> None:
    # the design's default, and the config's: a record up to 120 tokens goes whole
    assert DEFAULT_EXCERPT_TOKENS == RecallConfig().excerpt_tokens == 120


@pytest.mark.parametrize(
    ("text", "tokens"), [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 256, 64)]
)
def test_est_tokens_is_ceil_chars_over_four(text: str, tokens: int) -> None:
    assert est_tokens(text) == tokens


def test_recoverability_formula() -> None:
    assert recoverability(0, 0) == pytest.approx(1 / 6)
    assert recoverability(168, 0) == pytest.approx(0.5 / 6)  # one half-life
    assert recoverability(336, 4) == pytest.approx(0.25 * 5 / 10)
    assert recoverability(-5, 0) == recoverability(0, 0)  # from the future: new
    assert recoverability(0, -3) == recoverability(0, 0)  # no hits below zero
    assert recoverability(math.nan, 3) == 0.0
    assert recoverability(math.inf, 3) == 0.0


def test_ordering_is_score_then_input_order() -> None:
    # Packing goes by how well a record matches (retrieval_score), best first;
    # recency and hits (recoverability) play no part in the order.
    candidates = [
        cand("t1", score=0.5, hits=9),  # most hits, worst score: last
        cand("t2", score=1.0, age=500),  # ties with t4: input order keeps t2 first
        cand("t3", score=5.0, age=900),  # oldest, best score: first
        cand("t4", score=1.0),
        cand("t5", score=math.nan, hits=50),  # NaN ranks last, after every number
        cand("t6", score=2.0),
    ]
    report = retain_within_budget(candidates, 10_000)
    assert [c.id for c in report.capsules] == ["t3", "t6", "t4", "t2", "t1", "t5"]
    assert report.capsules[0].retrieval_score == 5.0
    assert report.capsules[-1].retrieval_score == -math.inf
    # recoverability is still reported per capsule (the sidebar shows it)
    assert report.capsules[4].recoverability == pytest.approx(recoverability(0, 9))


def test_capsule_keeps_who_said_it_when() -> None:
    said = RetentionCandidate(
        id="r7",
        content="Your dentist is on Friday.",
        access_count=0,
        age_hours=0,
        retrieval_score=1.0,
        role="assistant",
        said_at=1_683_540_000.0,
        kind="turn",
    )
    note = RetentionCandidate("n3", "Dentist: Dr Ruiz", 0, 0, 0.5, kind="note")
    report = retain_within_budget([said, note], 1000)
    reply, saved = report.capsules
    assert (reply.role, reply.said_at, reply.kind) == ("assistant", 1_683_540_000.0, "turn")
    assert (saved.role, saved.kind) == ("", "note")


def test_capsule_cost_counts_excerpt_and_key() -> None:
    report = retain_within_budget([cand("t42", "ten chars!")], 100)
    (capsule,) = report.capsules
    assert capsule.id == capsule.retrieval_key == "t42"
    assert capsule.excerpt == "ten chars!"  # fits whole
    assert capsule.tokens == est_tokens("ten chars!") + est_tokens("t42") == 3 + 1
    assert report.retained_tokens == 4


def test_each_capsule_can_be_charged_for_its_line() -> None:
    report = retain_within_budget([cand("t42", "ten chars!")], 100, line_tokens=LINE_TOKENS)
    assert report.capsules[0].tokens == 3 + 1 + LINE_TOKENS
    # the stop rule counts it too: key + line + MIN_EXCERPT_TOKENS must remain
    tiny = cand("t1", "a")
    assert retain_within_budget([tiny], 1 + LINE_TOKENS + MIN_EXCERPT_TOKENS - 1,
                                line_tokens=LINE_TOKENS).capsules == []  # fmt: skip


def test_a_record_up_to_excerpt_tokens_goes_whole() -> None:
    whole = "y" * (10 * 4)  # exactly 10 tokens
    report = retain_within_budget([cand("t1", whole)], 10_000, excerpt_tokens=10)
    assert report.capsules[0].excerpt == whole
    longer = "y" * (10 * 4 + 1)  # 11 tokens: cut to the cap
    report = retain_within_budget([cand("t1", longer)], 10_000, excerpt_tokens=10)
    assert report.capsules[0].excerpt == "y" * 40
    assert report.capsules[0].tokens == 10 + 1


def test_default_cap_keeps_a_message_of_excerpt_tokens_whole() -> None:
    message = "m" * (DEFAULT_EXCERPT_TOKENS * 4)
    report = retain_within_budget([cand("t1", message)], 10_000)
    assert report.capsules[0].excerpt == message
    report = retain_within_budget([cand("t1", message + "m")], 10_000)
    assert report.capsules[0].excerpt == message  # the head, at the cap


def test_a_capsule_that_does_not_fit_is_skipped_and_packing_goes_on() -> None:
    # The best match costs 100 + 1 tokens and 50 remain: it is skipped, not cut
    # down to what remains; the shorter ones after it are packed.
    big = cand("t1", "b" * 400, score=3.0)
    small = cand("t2", "a" * 40, score=2.0)  # 10 + 1 tokens
    smaller = cand("t3", "c" * 8, score=1.0)  # 2 + 1 tokens
    report = retain_within_budget([small, big, smaller], 50)
    assert [c.id for c in report.capsules] == ["t2", "t3"]
    assert report.capsules[0].excerpt == "a" * 40
    assert report.retained_tokens == 14
    assert report.dropped == 1


def test_stop_rule_exact_boundary() -> None:
    # key "t1" costs 1 token: packing needs key + MIN_EXCERPT_TOKENS remaining,
    # even for a capsule that would cost less.
    need = 1 + MIN_EXCERPT_TOKENS
    exact = cand("t1", "a" * (MIN_EXCERPT_TOKENS * 4))  # costs exactly `need`
    assert [c.id for c in retain_within_budget([exact], need).capsules] == ["t1"]
    assert retain_within_budget([exact], need).retained_tokens == need
    tiny = cand("t1", "a")  # costs 2 tokens, but packing has stopped
    assert retain_within_budget([tiny], need - 1).capsules == []
    assert retain_within_budget([tiny], need).capsules != []
    # A longer key needs more: "key-12345" is 3 tokens.
    assert retain_within_budget([cand("key-12345", "a")], 3 + MIN_EXCERPT_TOKENS).capsules != []
    assert retain_within_budget([cand("key-12345", "a")], 2 + MIN_EXCERPT_TOKENS).capsules == []


def test_stop_rule_stops_rather_than_skips() -> None:
    first = cand("t1", "a" * 44, score=3.0)  # 11 + 1 = 12 tokens, leaves 17 of 29
    second = cand("a-much-longer-key", "b", score=2.0)  # 5-token key needs 21: packing stops
    third = cand("t3", "c" * 8, score=1.0)  # would fit (3 tokens, needs 17), but stopped
    report = retain_within_budget([third, second, first], 12 + 1 + MIN_EXCERPT_TOKENS)
    assert [c.id for c in report.capsules] == ["t1"]
    assert report.dropped == 2
    assert report.candidates_examined == 3


def test_second_capsule_exactly_at_the_boundary() -> None:
    first = cand("t1", "a" * 48, score=2.0)  # 12 + 1 = 13 tokens
    second = cand("t2", "b" * (MIN_EXCERPT_TOKENS * 4), score=1.0)  # 16 + 1 = 17 tokens
    report = retain_within_budget([first, second], 13 + 17)
    assert [c.id for c in report.capsules] == ["t1", "t2"]
    assert report.capsules[1].excerpt == "b" * (MIN_EXCERPT_TOKENS * 4)  # whole
    assert report.retained_tokens == 30
    assert [c.id for c in retain_within_budget([first, second], 13 + 16).capsules] == ["t1"]


def test_budget_exhaustion_with_many_candidates() -> None:
    candidates = [cand(f"t{i}", "w" * 1000) for i in range(1, 11)]
    full = DEFAULT_EXCERPT_TOKENS + 1  # a cut record plus its 1-token key
    report = retain_within_budget(candidates, 3 * full + MIN_EXCERPT_TOKENS + 5)
    # Three fit; the rest each cost `full` and are skipped (enough remains to try).
    assert [c.tokens for c in report.capsules] == [full] * 3
    assert [c.id for c in report.capsules] == ["t1", "t2", "t3"]
    assert report.retained_tokens == 3 * full
    assert report.dropped == 7
    assert report.budget_tokens == 3 * full + MIN_EXCERPT_TOKENS + 5


def test_zero_and_negative_budget() -> None:
    report = retain_within_budget([cand("t1"), cand("t2")], 0)
    assert (report.capsules, report.retained_tokens, report.dropped) == ([], 0, 2)
    negative = retain_within_budget([cand("t1")], -50)
    assert negative.capsules == []
    assert negative.retained_tokens <= negative.budget_tokens == 0


def test_empty_input() -> None:
    report = retain_within_budget([], 1000)
    assert report.capsules == []
    assert (report.retained_tokens, report.candidates_examined, report.dropped) == (0, 0, 0)


def test_empty_content_and_zero_excerpt_tokens() -> None:
    # A capsule with no text is a key with no evidence: never packed.
    blank = [cand("t1", ""), cand("t2", "  \n "), cand("t3", "abc")]
    report = retain_within_budget(blank, 100)
    assert [(c.id, c.excerpt) for c in report.capsules] == [("t3", "abc")]
    assert report.dropped == 2
    nothing = retain_within_budget(blank, 100, excerpt_tokens=0)
    assert (nothing.capsules, nothing.retained_tokens, nothing.dropped) == ([], 0, 3)


def test_input_is_never_mutated() -> None:
    candidates = [cand("t2", "b" * 500, age=3), cand("t1", "a" * 500, hits=2)]
    before = copy.deepcopy(candidates)
    retain_within_budget(candidates, 100, query="a b")
    assert candidates == before


FILLER = (
    "We went over the quarterly plan again this morning. Nothing surprising came up. "
    "The team asked whether the code review queue could move faster. "
)
FACT = "The access code for the Vellmar depot is 4471-KQ."


def test_query_picks_the_matching_stretch_not_the_head() -> None:
    content = FILLER * 3 + FACT + " " + FILLER * 3
    candidates = [cand("t1", content)]
    head = retain_within_budget(candidates, 1000, excerpt_tokens=64)
    assert head.capsules[0].excerpt == content[: 64 * 4]
    assert FACT not in head.capsules[0].excerpt

    query = "What code opens the Vellmar depot?"
    aware = retain_within_budget(candidates, 1000, excerpt_tokens=64, query=query)
    excerpt = aware.capsules[0].excerpt
    assert FACT in excerpt
    assert excerpt.startswith(FACT)  # the window opens at the fact's sentence
    assert excerpt in content and len(excerpt) <= 64 * 4


def test_query_window_prefers_a_whole_statement() -> None:
    # "code" alone appears earlier; the window covering code + Vellmar + depot
    # in one sentence wins over one that only reaches the fact's first words.
    content = FILLER * 2 + FACT + " " + FILLER
    query = "code to the Vellmar depot"
    report = retain_within_budget([cand("t1", content)], 1000, excerpt_tokens=30, query=query)
    assert FACT in report.capsules[0].excerpt


def test_query_without_matches_falls_back_to_the_head() -> None:
    content = FILLER * 5
    assert est_tokens(content) > DEFAULT_EXCERPT_TOKENS  # long enough to be cut
    report = retain_within_budget([cand("t1", content)], 1000, query="zebra xylophone")
    assert report.capsules[0].excerpt == content[: DEFAULT_EXCERPT_TOKENS * 4]


def test_query_matching_is_case_and_accent_insensitive() -> None:
    content = FILLER * 4 + "Le café Zoë ouvre à 7h." + " " + FILLER * 4
    excerpt = retain_within_budget([cand("t1", content)], 1000, query="CAFE zoe").capsules[0]
    assert "Le café Zoë ouvre à 7h." in excerpt.excerpt


def test_query_in_a_sentence_longer_than_the_cap() -> None:
    words = [f"word{i}" for i in range(200)]
    words[150] = "needle"
    content = " ".join(words)  # one sentence of ~1,400 characters
    excerpt = retain_within_budget([cand("t1", content)], 1000, excerpt_tokens=16, query="needle")
    text = excerpt.capsules[0].excerpt
    assert "needle" in text and text in content and len(text) <= 64
    assert text.startswith("word")  # starts on a word boundary, with context before


def test_random_inputs_keep_every_invariant() -> None:
    import random

    rng = random.Random(1234)
    vocab = ["alpha", "Beta", "gamma", "délta", "é", "42", "x_y", "k-9", "日本", "🙂"]
    punct = [" ", " ", " ", ". ", "! ", "? ", "\n", ", ", '" ', "… "]
    for _ in range(300):
        candidates = []
        for i in range(rng.randint(0, 8)):
            content = "".join(
                rng.choice(vocab) + rng.choice(punct) for _ in range(rng.randint(0, 120))
            )
            candidates.append(
                cand(
                    rng.choice(["t", "n", "c", "key-"]) + str(i) * rng.randint(1, 12),
                    content,
                    age=rng.uniform(-10, 1000),
                    hits=rng.randint(0, 5),
                    score=rng.uniform(0, 10),
                )
            )
        budget = rng.randint(-5, 600)
        excerpt_tokens = rng.randint(0, 100)
        query = rng.choice([None, "", "alpha gamma", "DELTA 42", "🙂 k 9", "zzz"])
        terms = frozenset(query_terms(query)) if query else frozenset()
        before = copy.deepcopy(candidates)
        report = retain_within_budget(candidates, budget, excerpt_tokens, query=query)

        assert candidates == before
        assert 0 <= report.retained_tokens <= max(budget, 0) == report.budget_tokens
        assert report.retained_tokens == sum(c.tokens for c in report.capsules)
        assert report.dropped == len(candidates) - len(report.capsules)
        assert report.candidates_examined == len(candidates)
        # Replay the rules over the candidates best score first: each is packed
        # exactly when it fits, until less than key + MIN_EXCERPT_TOKENS remains.
        packed = iter(report.capsules)
        remaining = max(budget, 0)
        for source in sorted(candidates, key=lambda c: -c.retrieval_score):
            key_tokens = est_tokens(source.id)
            if remaining < key_tokens + MIN_EXCERPT_TOKENS:
                break
            if len(source.content) <= excerpt_tokens * 4:
                excerpt = source.content  # whole
            else:
                excerpt = select_excerpt(source.content, excerpt_tokens * 4, terms)
            tokens = est_tokens(excerpt) + key_tokens
            if not excerpt.strip() or tokens > remaining:
                continue  # skipped; packing goes on
            capsule = next(packed)
            assert capsule.retrieval_key == capsule.id == source.id
            assert capsule.excerpt == excerpt and excerpt in source.content
            assert len(capsule.excerpt) <= excerpt_tokens * 4
            assert capsule.tokens == tokens
            remaining -= tokens
        assert next(packed, None) is None  # nothing packed beyond the rules
        scores = [c.retrieval_score for c in report.capsules]
        assert scores == sorted(scores, reverse=True)


def test_a_candidate_goes_only_with_its_newer_statement() -> None:
    old = RetentionCandidate("t1", "x" * 80, 0, 0.0, retrieval_score=9.0, newer="t9")
    other = cand("t2", "y" * 80, score=8.0)
    newer = cand("t9", "z" * 80, score=1.0)
    both = sum(est_tokens(c.content) + est_tokens(c.id) for c in (old, newer))
    # room for the old one and its newer one: both, the newer packed though it scores lowest
    report = retain_within_budget([old, other, newer], both)
    assert [c.id for c in report.capsules] == ["t1", "t9"]
    assert report.capsules[0].newer == "t9"
    # room for one: never the old value alone; the next best goes instead
    report = retain_within_budget([old, other, newer], both - 1)
    assert [c.id for c in report.capsules] == ["t2"]
    # a newer statement that is not offered (it is in the request already) binds nothing
    report = retain_within_budget([old, other], both - 1)
    assert [c.id for c in report.capsules] == ["t1"]


def test_a_chain_of_newer_statements_goes_whole_or_not_at_all() -> None:
    first = RetentionCandidate("t1", "a" * 40, 0, 0.0, retrieval_score=9.0, newer="t5")
    middle = RetentionCandidate("t5", "b" * 40, 0, 0.0, retrieval_score=2.0, newer="t9")
    last = cand("t9", "c" * 40, score=1.0)
    other = cand("t2", "d" * 40, score=8.0)
    chain = sum(est_tokens(c.content) + est_tokens(c.id) for c in (first, middle, last))
    report = retain_within_budget([first, other, middle, last], chain)
    assert [c.id for c in report.capsules] == ["t1", "t5", "t9"]
    report = retain_within_budget([first, other, middle, last], chain - 1)
    assert "t1" not in [c.id for c in report.capsules]
