"""TokenBudget budget math (docs/design.md section 4), with concrete numbers.

Default estimate: chars/4 rounded up, so a 400-character text is 100 tokens.
"""

from __future__ import annotations

from newt.memory import (
    DEFAULT_CONTEXT_TOKENS,
    TokenBudget,
    TokenEstimation,
    TurnMetrics,
    Usage,
)

NO_USAGE = TurnMetrics()


def reported(prompt: int, completion: int) -> TurnMetrics:
    return TurnMetrics(Usage(prompt, completion))


def test_budget_is_threshold_share_of_the_window() -> None:
    assert TokenBudget(24000, 0.80).budget == 19200
    assert TokenBudget(512, 0.99).budget == 506
    assert TokenBudget().max_tokens == DEFAULT_CONTEXT_TOKENS == 8192
    assert TokenBudget().budget == 6553  # floor(8192 * 0.8)


def test_window_floor_is_512_tokens() -> None:
    small = TokenBudget(100, 0.5)
    assert small.max_tokens == 512
    assert small.budget == 256


def test_threshold_is_clamped_to_10_and_99_percent() -> None:
    assert TokenBudget(1000, 0.05).threshold_pct == 0.10
    assert TokenBudget(1000, 0.05).budget == 100
    assert TokenBudget(1000, 1.5).threshold_pct == 0.99
    assert TokenBudget(1000, 1.5).budget == 990


def test_with_budget_applies_the_floor_and_records_the_source() -> None:
    p = TokenBudget()
    assert p.budget_source == "default"
    assert p.with_budget(100) is p
    assert (p.max_tokens, p.budget) == (512, 409)  # floor(512 * 0.8)
    p.with_budget(24000, source="config")
    assert (p.budget, p.budget_source) == (19200, "config")
    assert p.usage() == ("tokens", 0, 19200)


def test_usage_label_and_name() -> None:
    p = TokenBudget(24000, 0.8)
    assert p.name == "token_budget"
    assert p.usage() == ("tokens", 0, 19200)


def test_estimation_is_ceil_of_chars_over_ratio() -> None:
    assert TokenEstimation().tokens_for("a" * 400) == 100
    assert TokenEstimation().tokens_for("a" * 401) == 101
    assert TokenEstimation().tokens_for("") == 0
    assert TokenEstimation(2).tokens_for("abcde") == 3
    assert TokenEstimation(0).tokens_for("abcde") == 5  # max(1, 0)
    assert TokenEstimation(2.5).tokens_for("abcde") == 2


async def test_with_estimation_drives_every_estimate() -> None:
    p = TokenBudget().with_estimation(TokenEstimation(2))
    await p.sync_turn("u" * 10, "a" * 7, NO_USAGE)
    assert p.usage()[1] == 5 + 4
    await p.sync_turn("u" * 10, "a" * 7, reported(300, 3))
    assert p.usage()[1] == 300 + 4  # the reply, at 2 chars per token


async def test_fallback_sum_counts_each_turn_once() -> None:
    p = TokenBudget()
    await p.sync_turn("u" * 40, "a" * 80, NO_USAGE)
    assert p.usage()[1] == 10 + 20
    await p.sync_turn("u" * 4, "a" * 5, NO_USAGE)
    assert p.usage()[1] == 30 + 1 + 2
    assert p.last_reported is None
    assert p.estimate_delta == 0


async def test_used_is_anchored_on_the_reported_prompt_plus_the_reply() -> None:
    p = TokenBudget()
    await p.sync_turn("u" * 40, "a" * 80, reported(500, 20))
    # The report already holds the system prompt, history and this user
    # message; only the reply (80 chars = 20 tokens) is added.
    assert p.usage()[1] == 520
    assert (p.last_reported, p.estimate_delta) == (500, 20)


async def test_turns_without_a_report_add_their_estimate_to_the_delta() -> None:
    p = TokenBudget()
    await p.sync_turn("u" * 40, "a" * 80, reported(500, 20))
    await p.sync_turn("u" * 40, "a" * 40, NO_USAGE)
    assert p.usage()[1] == 500 + 20 + 10 + 10
    assert p.estimate_delta == 40
    # A new report replaces the anchor and the delta.
    await p.sync_turn("u" * 8, "a" * 12, reported(700, 5))
    assert p.usage()[1] == 703
    assert (p.last_reported, p.estimate_delta) == (700, 3)


async def test_used_never_goes_negative() -> None:
    p = TokenBudget(1000, 0.5).with_estimation(TokenEstimation(1))
    await p.sync_turn("u" * 2000, "a", reported(10, 1))
    await p.sync_turn("u" * 2000, "a", reported(20, 1))
    # The backend under-reported: a 21-token anchor for two 2001-token turns.
    # Folding the oldest subtracts its estimate, which takes anchor + delta
    # far below zero; `used` clamps at zero instead.
    assert await p.compact()
    assert p.last_reported is not None
    assert p.last_reported + p.estimate_delta < 0  # the clamp is really reached
    assert p.usage()[1] == 0


async def test_twenty_turns_no_double_counting() -> None:
    """An old bug: summing input+output per turn counts history again each turn."""
    p = TokenBudget(32000, 0.8)
    system_tokens, user_tokens, reply_tokens = 100, 100, 100
    naive = 0
    for k in range(1, 21):
        prompt = system_tokens + (k - 1) * (user_tokens + reply_tokens) + user_tokens
        naive += prompt + reply_tokens
        await p.sync_turn("u" * 400, "a" * 400, reported(prompt, reply_tokens))
    # What the next request really carries: system + 20 turns of 200 tokens.
    assert p.usage()[1] == 100 + 20 * 200 == 4100
    assert naive == 44000  # 10.7x the truth by turn 20
    assert p.resident_turns() == p.total_turns == 20
    assert p.compactions == 0


async def test_reset_clears_the_conversation_and_keeps_configuration() -> None:
    async def summarize(_: object) -> str:
        return "s"

    p = (
        TokenBudget(1000, 0.5)
        .with_budget(2000, source="config")
        .with_estimation(TokenEstimation(2))
        .with_summarizer(summarize)
    )
    for _ in range(6):
        await p.sync_turn("u" * 200, "a" * 200, reported(1200, 50))
    assert p.compactions >= 1
    p.reset()
    assert p.usage() == ("tokens", 0, 1000)
    assert (p.resident_turns(), p.total_turns, p.compactions) == (0, 0, 0)
    assert (p.last_reported, p.record, p.take_compaction_record()) == (None, None, None)
    assert (p.max_tokens, p.budget_source, p.summarizer) == (2000, "config", summarize)
    assert p.estimation == TokenEstimation(2)


async def test_a_newest_turn_that_alone_overflows_the_budget_is_folded_too() -> None:
    """The newest turn stays resident, unless even alone it leaves the
    conversation over its budget (a tiny window): then it is folded as well, so
    the fullness is within the budget after every turn."""
    p = TokenBudget(1024, 0.8).with_deferred_summaries()  # budget 819
    p.build_messages("system " * 50, "a question")
    await p.sync_turn("a question", "a short answer", reported(300, 50))
    assert p.resident_turns() == 1 and p.used <= p.budget
    p.build_messages("system " * 50, "q" * 400)
    await p.sync_turn("q" * 400, "a" * 1600, reported(700, 400))  # alone: 1,100 tokens
    assert p.used <= p.budget and p.resident_turns() == 0 and p.record is not None


async def test_a_summary_that_fails_says_why() -> None:
    async def broken(messages: object) -> str:
        raise ConnectionError("the server went away")

    p = TokenBudget(1000, 0.5).with_summarizer(broken).with_deferred_summaries()
    for n in range(6):
        p.build_messages("system", f"question {n} " + "words " * 40)
        await p.sync_turn(f"question {n} " + "words " * 40, "answer " * 40, NO_USAGE)
    assert p.summary_pending
    assert await p.summarize_pending() is None
    assert p.summary_failure is not None and "went away" in p.summary_failure
