"""A fold down to the low-water mark (`[memory] fold_to`, docs/design.md section 4).

Scenario numbers (chars/4): TokenBudget(4000, 0.5) has a 2,000-token budget;
a turn of 300 + 300 characters is 150 tokens.
"""

from __future__ import annotations

from itertools import pairwise

from newt.memory import MemMessage, TokenBudget, TurnMetrics

U, A = "u" * 300, "a" * 300
NO_USAGE = TurnMetrics()


async def summarize(messages: list[MemMessage]) -> str:
    return "S"


def head(p: TokenBudget) -> list[str]:
    """The system prompt and the record: the start of every request."""
    return [m.content for m in p.build_messages("sys", "next")[:2]]


async def starts(p: TokenBudget, turns: int) -> list[list[str]]:
    """The request's start after each of `turns` turns."""
    seen = []
    for _ in range(turns):
        await p.sync_turn(U, A, NO_USAGE)
        seen.append(head(p))
    return seen


async def test_a_fold_goes_down_to_the_low_water_mark_and_the_next_turns_append() -> None:
    p = TokenBudget(4000, 0.5).with_fold_to(0.5)
    assert (p.budget, p.fold_target) == (2000, 1000)
    seen = await starts(p, 40)
    folds = [i for i in range(1, len(seen)) if seen[i] != seen[i - 1]]
    # the first fold at the 14th turn (14 x 150 > 2,000), then one every ~7 turns
    assert folds[0] == 13
    assert all(b - a >= 5 for a, b in pairwise(folds)), folds
    assert p.used <= p.budget


async def test_right_after_a_fold_the_fullness_is_at_most_the_low_water_mark() -> None:
    p = TokenBudget(4000, 0.5).with_fold_to(0.5)
    for _ in range(40):
        before = p.compactions
        await p.sync_turn(U, A, NO_USAGE)
        if p.compactions != before:
            assert p.used <= p.fold_target


async def test_folding_just_enough_changes_the_start_every_turn() -> None:
    p = TokenBudget(4000, 0.5)  # fold_to 1.0: the library default
    seen = await starts(p, 30)
    folds = [i for i in range(1, len(seen)) if seen[i] != seen[i - 1]]
    assert folds == list(range(13, 30))


async def test_the_guard_leaves_the_same_headroom() -> None:
    p = TokenBudget(4000, 0.5).with_fold_to(0.5)
    for _ in range(12):
        await p.sync_turn(U, A, NO_USAGE)  # 1,800 of 2,000
    assert await p.compact_for(400)  # the new message and the reply reserve
    assert p.used + 400 <= p.budget - (p.budget - p.fold_target)


async def test_a_low_water_fold_makes_its_summary_due_at_once() -> None:
    low = TokenBudget(4000, 0.5).with_fold_to(0.5).with_summarizer(summarize)
    low.with_deferred_summaries()
    just = TokenBudget(4000, 0.5).with_summarizer(summarize)
    just.with_deferred_summaries()
    for p in (low, just):
        await starts(p, 14)
        assert p.owed_steps == 1
    assert (low.summary_overdue, just.summary_overdue) == (True, False)
    await starts(just, 1)
    assert just.summary_overdue  # folding just enough: from the second step
