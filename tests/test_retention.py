"""Every packing rule of DESIGN.md section 5, pinned with small hand-made candidates."""

from __future__ import annotations

import copy
import math

import pytest

from newt.recall import (
    DEFAULT_EXCERPT_TOKENS,
    RetentionCandidate,
    est_tokens,
    recoverability,
    retain_within_budget,
)


def cand(
    key: str, content: str = "x" * 400, *, age: float = 0.0, hits: int = 0, score: float = 0.0
) -> RetentionCandidate:
    return RetentionCandidate(
        id=key, content=content, access_count=hits, age_hours=age, retrieval_score=score
    )


def test_default_excerpt_tokens() -> None:
    assert DEFAULT_EXCERPT_TOKENS == 64


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


def test_ordering_is_recoverability_then_score_then_input_order() -> None:
    candidates = [
        cand("t1", age=500),  # oldest: last
        cand("t2", score=1.0),  # tie on recoverability with t3, t4; lower score
        cand("t3", score=5.0),  # same recoverability, best score: first of the tie
        cand("t4", score=1.0),  # same as t2: input order keeps t2 first
        cand("t5", hits=9),  # most hits: first overall
    ]
    report = retain_within_budget(candidates, 10_000)
    assert [c.id for c in report.capsules] == ["t5", "t3", "t2", "t4", "t1"]
    recs = [c.recoverability for c in report.capsules]
    assert recs == sorted(recs, reverse=True)
    assert report.capsules[0].recoverability == pytest.approx(recoverability(0, 9))


def test_capsule_cost_counts_excerpt_and_key() -> None:
    report = retain_within_budget([cand("t42", "ten chars!")], 100)
    (capsule,) = report.capsules
    assert capsule.id == capsule.retrieval_key == "t42"
    assert capsule.excerpt == "ten chars!"  # fits whole
    assert capsule.tokens == est_tokens("ten chars!") + est_tokens("t42") == 3 + 1
    assert report.retained_tokens == 4


def test_excerpt_cap_is_excerpt_tokens_times_four() -> None:
    report = retain_within_budget([cand("t1", "y" * 1000)], 10_000, excerpt_tokens=10)
    assert report.capsules[0].excerpt == "y" * 40
    assert report.capsules[0].tokens == 10 + 1


def test_excerpt_cap_shrinks_to_what_remains() -> None:
    # 30 tokens left, key "t1" costs 1: excerpt at most min(29, 64) * 4 = 116 chars.
    report = retain_within_budget([cand("t1", "z" * 1000)], 30)
    assert report.capsules[0].excerpt == "z" * 116
    assert report.retained_tokens == 30


def test_stop_rule_exact_boundary() -> None:
    # key "t1" costs 1 token: packing needs key + 16 = 17 tokens remaining.
    assert len(retain_within_budget([cand("t1")], 17).capsules) == 1
    assert retain_within_budget([cand("t1")], 17).retained_tokens == 17
    assert retain_within_budget([cand("t1")], 16).capsules == []
    # A longer key needs more: "key-12345" is 3 tokens, so 19 remaining is required.
    assert retain_within_budget([cand("key-12345")], 19).capsules != []
    assert retain_within_budget([cand("key-12345")], 18).capsules == []


def test_stop_rule_stops_rather_than_skips() -> None:
    first = cand("t1", "a" * 44, hits=5)  # 11 + 1 = 12 tokens, leaves 17 of 29
    second = cand("a-much-longer-key", hits=3)  # 5-token key needs 21: packing stops here
    third = cand("t3", hits=0)  # would fit (needs 17), but packing has stopped
    report = retain_within_budget([third, second, first], 29)
    assert [c.id for c in report.capsules] == ["t1"]
    assert report.dropped == 2
    assert report.candidates_examined == 3


def test_second_capsule_exactly_at_the_boundary() -> None:
    first = cand("t1", "a" * 48, hits=1)  # 12 + 1 = 13 tokens
    second = cand("t2", "b" * 400)
    report = retain_within_budget([first, second], 13 + 17)
    assert [c.id for c in report.capsules] == ["t1", "t2"]
    assert report.capsules[1].excerpt == "b" * 64  # min(17 - 1, 64) * 4
    assert report.retained_tokens == 30
    assert [c.id for c in retain_within_budget([first, second], 13 + 16).capsules] == ["t1"]


def test_budget_exhaustion_with_many_candidates() -> None:
    candidates = [cand(f"t{i}", "w" * 1000) for i in range(1, 11)]
    report = retain_within_budget(candidates, 200)
    # Each full capsule costs 64 + 1 = 65: three fit (195), then 5 remain < 17.
    assert [c.tokens for c in report.capsules] == [65, 65, 65]
    assert report.retained_tokens == 195
    assert report.dropped == 7
    assert report.budget_tokens == 200


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
    report = retain_within_budget([cand("t1", ""), cand("t2", "abc")], 100, excerpt_tokens=0)
    assert [(c.excerpt, c.tokens) for c in report.capsules] == [("", 1), ("", 1)]


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
    head = retain_within_budget(candidates, 1000)
    assert head.capsules[0].excerpt == content[: 64 * 4]
    assert FACT not in head.capsules[0].excerpt

    aware = retain_within_budget(candidates, 1000, query="What code opens the Vellmar depot?")
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
    report = retain_within_budget([cand("t1", content)], 1000, query="zebra xylophone")
    assert report.capsules[0].excerpt == content[:256]


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
        before = copy.deepcopy(candidates)
        report = retain_within_budget(candidates, budget, excerpt_tokens, query=query)

        assert candidates == before
        assert 0 <= report.retained_tokens <= max(budget, 0) == report.budget_tokens
        assert report.retained_tokens == sum(c.tokens for c in report.capsules)
        assert report.dropped == len(candidates) - len(report.capsules)
        assert report.candidates_examined == len(candidates)
        by_id = {c.id: c for c in candidates}
        remaining = max(budget, 0)
        for capsule in report.capsules:
            source = by_id[capsule.id]
            key_tokens = est_tokens(capsule.retrieval_key)
            assert capsule.retrieval_key == source.id
            assert capsule.excerpt in source.content
            assert remaining >= key_tokens + 16
            assert len(capsule.excerpt) <= min(remaining - key_tokens, excerpt_tokens) * 4
            assert capsule.tokens == est_tokens(capsule.excerpt) + key_tokens
            remaining -= capsule.tokens
        recs = [c.recoverability for c in report.capsules]
        assert recs == sorted(recs, reverse=True)
