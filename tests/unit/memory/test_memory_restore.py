"""restore_turns rebuilds the working set and fullness from the durable log.

The conversation is persisted exactly as the app does it: each turn with the
backend's tokens_in/tokens_out, then, if take_compaction_record() hands one
over, the record with resident_turns() and usage()[1] read at that moment.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from newt.memory import (
    ConversationTurn,
    MemMessage,
    TokenBudget,
    TokenEstimation,
    TurnMetrics,
    Usage,
    conversation_turns_from_log,
    format_record,
)
from newt.store import Store

SYSTEM = "You are a test assistant."
EST = TokenEstimation()

# A 500-token budget's record owing two folded turns: its cap holds the count line alone.
OWED_4 = "No summary written yet: 4 message(s) were removed in 1 step(s)."


def backend_usage(messages: list[MemMessage], reply: str) -> Usage:
    """A deterministic stand-in for the server's counts: 3 chars per token and
    5 tokens of template per message, so they differ from newt's chars/4."""
    prompt = sum(math.ceil(len(m.content) / 3) + 5 for m in messages)
    return Usage(prompt, math.ceil(len(reply) / 3))


def exchange(i: int) -> tuple[str, str]:
    user = f"question {i}: " + "tell me more " * (8 + i % 5)
    return user, f"answer {i}: " + "lorem " * (20 + i % 7)


@dataclass
class Summaries:
    calls: int = 0
    inputs: list[list[MemMessage]] = field(default_factory=list)

    async def __call__(self, messages: list[MemMessage]) -> str:
        self.calls += 1
        self.inputs.append(messages)
        return f"summary #{self.calls} of {len(messages[1].content)} chars"


def provider(summarizer: Summaries | None = None) -> TokenBudget:
    p = TokenBudget(1200, 0.5)  # budget 600
    return p.with_summarizer(summarizer) if summarizer else p


def snapshot(p: TokenBudget) -> tuple[object, ...]:
    return (
        p.build_messages(SYSTEM, "next"),
        p.usage(),
        p.resident_turns(),
        p.total_turns,
        p.compactions,
    )


async def drive(
    p: TokenBudget, log: list[ConversationTurn], turns: range, *, reports: bool
) -> None:
    """Run turns and persist them into `log` the way the app does."""
    for i in turns:
        user, reply = exchange(i)
        usage = backend_usage(p.build_messages(SYSTEM, user), reply) if reports else None
        log.append(
            ConversationTurn(
                user,
                reply,
                tokens_in=usage.input_tokens if usage else None,
                tokens_out=usage.output_tokens if usage else None,
            )
        )
        await p.sync_turn(user, reply, TurnMetrics(usage))
        record = p.take_compaction_record()
        if record is not None:
            log.append(
                ConversationTurn(
                    record, "", resident_turns=p.resident_turns(), used_after=p.usage()[1]
                )
            )


@pytest.mark.parametrize("reports", [True, False], ids=["usage", "no-usage"])
@pytest.mark.parametrize("summarize", [True, False], ids=["summarizer", "fallback"])
async def test_round_trip_after_every_turn(reports: bool, summarize: bool) -> None:
    live = provider(Summaries() if summarize else None)
    log: list[ConversationTurn] = []
    for i in range(16):
        await drive(live, log, range(i, i + 1), reports=reports)
        restored = provider(Summaries() if summarize else None)
        restored.restore_turns(log)
        assert snapshot(restored) == snapshot(live), f"after turn {i}"
        assert restored.take_compaction_record() is None  # nothing to re-persist
    assert live.compactions >= 2
    assert live.resident_turns() < live.total_turns == 16


async def test_round_trip_with_and_without_reports_mixed() -> None:
    live = provider(Summaries())
    log: list[ConversationTurn] = []
    for i in range(14):
        await drive(live, log, range(i, i + 1), reports=i % 3 != 1)
    restored = provider(Summaries())
    restored.restore_turns(log)
    assert live.compactions >= 2
    assert snapshot(restored) == snapshot(live)


async def test_round_trip_through_sqlite(tmp_path: Path) -> None:
    db = tmp_path / "newt.db"
    live = provider(Summaries())
    store = await Store.open(db)
    conv = await store.conversations.create(title="t")
    for i in range(14):
        user, reply = exchange(i)
        turn_id = await store.turns.add_pending(conv.id, user)  # before the request
        if i == 5:  # a failed request: persisted, never synced, never restored
            await store.turns.fail(turn_id, "backend down")
            continue
        usage = backend_usage(live.build_messages(SYSTEM, user), reply) if i % 4 else None
        await store.turns.complete(
            turn_id,
            reply,
            status="interrupted" if usage is None else "complete",
            tokens_in=usage.input_tokens if usage else None,
            tokens_out=usage.output_tokens if usage else None,
        )
        await live.sync_turn(user, reply, TurnMetrics(usage))
        record = live.take_compaction_record()
        if record is not None:
            await store.turns.add_compaction(
                conv.id, record, resident_turns=live.resident_turns(), used_after=live.usage()[1]
            )
    await store.turns.add_pending(conv.id, "sent when the app died")  # never answered
    await store.close()

    store = await Store.open(db)
    try:
        log = await store.turns.for_conversation(conv.id)
    finally:
        await store.close()
    assert [t.kind for t in log].count("compaction") == live.compactions >= 2
    restored = provider(Summaries())
    restored.restore_turns(conversation_turns_from_log(log))
    assert snapshot(restored) == snapshot(live)
    assert restored.total_turns == 13


async def test_log_conversion_keeps_complete_interrupted_and_records(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "newt.db") as store:
        conv = await store.conversations.create()
        done = await store.turns.add_pending(conv.id, "q1")
        await store.turns.complete(done, "a1", tokens_in=50, tokens_out=7)
        cut = await store.turns.add_pending(conv.id, "q2")
        await store.turns.complete(cut, "partial", status="interrupted")
        await store.turns.add_compaction(
            conv.id, format_record("s"), resident_turns=1, used_after=99
        )
        failed = await store.turns.add_pending(conv.id, "q3")
        await store.turns.fail(failed, "boom")
        await store.turns.add_pending(conv.id, "q4")
        turns = conversation_turns_from_log(await store.turns.for_conversation(conv.id))
    assert turns == [
        ConversationTurn("q1", "a1", tokens_in=50, tokens_out=7),
        ConversationTurn("q2", "partial"),
        ConversationTurn(format_record("s"), "", resident_turns=1, used_after=99),
    ]
    assert [t.is_compaction for t in turns] == [False, False, True]


# -- the restore rules one by one ------------------------------------------------

U, A = "u" * 300, "a" * 300  # 75 + 75 tokens
REC = format_record("earlier")


def turn(tokens_in: int | None = None) -> ConversationTurn:
    return ConversationTurn(U, A, tokens_in=tokens_in, tokens_out=75 if tokens_in else None)


def test_no_record_and_no_reports_gives_the_fallback_sum() -> None:
    p = TokenBudget(8192, 0.8)
    p.restore_turns([turn(), turn()])
    assert (p.usage()[1], p.resident_turns(), p.last_reported) == (300, 2, None)


def test_the_last_reported_turn_anchors_and_later_turns_add_their_estimate() -> None:
    p = TokenBudget(8192, 0.8)
    p.restore_turns([turn(400), turn(700), turn(), turn()])
    assert p.usage()[1] == 700 + 75 + 150 + 150
    assert (p.last_reported, p.estimate_delta) == (700, 375)


def test_the_record_keeps_its_resident_turns_and_its_fullness() -> None:
    p = TokenBudget(8192, 0.8)
    log = [
        ConversationTurn("old1", "x", tokens_in=10),
        ConversationTurn("old2", "y", tokens_in=20),
        ConversationTurn("kept", "z", tokens_in=30),
        ConversationTurn(REC, "", resident_turns=1, used_after=321),
        turn(),
    ]
    p.restore_turns(log)
    contents = [m.content for m in p.build_messages("S", "N")]
    assert contents == ["S", REC, "kept", "z", U, A, "N"]
    # No report after the record: its fullness plus what came after it.
    assert p.usage()[1] == 321 + 150
    assert (p.total_turns, p.compactions) == (4, 1)


def test_only_the_last_record_counts() -> None:
    p = TokenBudget(8192, 0.8)
    first, second = format_record("first"), format_record("second")
    p.restore_turns(
        [
            turn(),
            ConversationTurn(first, "", resident_turns=0, used_after=50),
            turn(),
            ConversationTurn(second, "", resident_turns=0, used_after=90),
            turn(500),
        ]
    )
    assert [m.content for m in p.build_messages("S", "N")] == ["S", second, U, A, "N"]
    assert p.usage()[1] == 500 + 75
    assert p.compactions == 2


def test_resident_turns_larger_than_the_log_keeps_what_exists() -> None:
    p = TokenBudget(8192, 0.8)
    p.restore_turns([turn(), ConversationTurn(REC, "", resident_turns=5, used_after=200)])
    assert (p.resident_turns(), p.usage()[1]) == (1, 200)


# -- a crash between persisting a turn and persisting its record -----------------


async def test_crash_before_the_first_record_is_persisted() -> None:
    live = TokenBudget(1000, 0.5)  # budget 500; each turn 150
    for _ in range(4):
        await live.sync_turn(U, A, TurnMetrics())
    assert live.record == format_record(OWED_4)
    # The app died before add_compaction: the log holds the four turns only.
    restored = TokenBudget(1000, 0.5)
    restored.restore_turns([turn()] * 4)
    # 600 > 500: the two oldest fold into a fallback record, as live.
    assert restored.usage() == ("tokens", 300 + 102, 500)
    assert snapshot(restored) == snapshot(live)
    assert restored.take_compaction_record() == format_record(OWED_4)


async def test_crash_after_a_reported_turn_folds_into_the_previous_record() -> None:
    summaries = Summaries()
    live = TokenBudget(1000, 0.5).with_summarizer(summaries)
    log: list[ConversationTurn] = []
    for prompt in (210, 435):
        await live.sync_turn(U, A, TurnMetrics(Usage(prompt, 75)))
        log.append(turn(prompt))
    # 435 + 75 = 510 > 500: the oldest turn went into a summary record.
    record = live.take_compaction_record()
    assert record == format_record("summary #1 of 696 chars")
    used_after = live.usage()[1]
    assert used_after == 510 - 150 + EST.tokens_for(record) == 510 - 150 + 92
    log.append(ConversationTurn(record, "", resident_turns=1, used_after=used_after))

    await live.sync_turn(U, A, TurnMetrics(Usage(540, 75)))  # 615: prunes again
    assert live.usage()[1] == 615 - 150 == 465  # summary #2 has the same size
    log.append(turn(540))  # ...and the app dies before the record is written.

    restored = TokenBudget(1000, 0.5).with_summarizer(summaries)
    restored.restore_turns(log)
    assert summaries.calls == 2  # restore is synchronous: it never summarizes
    # Anchor 540 + 75 = 615 > 500: the older resident turn folds in, with the
    # fallback line under the persisted summary (record 92 -> 108 tokens).
    body = (
        "summary #1 of 696 chars\n\nNo summary written yet: 2 message(s) were removed in 1 step(s)."
    )
    assert restored.record == format_record(body)
    assert restored.usage() == ("tokens", 615 - 150 - 92 + 108, 500) == ("tokens", 481, 500)
    assert restored.resident_turns() == 1
    contents = [m.content for m in restored.build_messages("S", "N")]
    assert contents == ["S", restored.record, U, A, "N"]
    # Persisting the pending record makes the next restore identical without pruning.
    pending = restored.take_compaction_record()
    assert pending == restored.record
    log.append(
        ConversationTurn(
            pending, "", resident_turns=restored.resident_turns(), used_after=restored.usage()[1]
        )
    )
    again = TokenBudget(1000, 0.5)
    again.restore_turns(log)
    assert again.take_compaction_record() is None
    assert (again.usage(), again.build_messages("S", "N")) == (
        restored.usage(),
        restored.build_messages("S", "N"),
    )


async def test_a_guard_compaction_persisted_after_its_turn_restores_identically() -> None:
    """The pre-send guard folds turns before the new turn exists; the app takes
    the record after sync_turn, so the log holds it after that turn."""
    live = provider(Summaries())
    log: list[ConversationTurn] = []
    await drive(live, log, range(3), reports=True)
    assert live.compactions == 0
    user, reply = exchange(3)
    assert await live.compact_for(400) is True  # a long message is coming
    assert live.resident_turns() < 3
    usage = backend_usage(live.build_messages(SYSTEM, user), reply)
    log.append(ConversationTurn(user, reply, usage.input_tokens, usage.output_tokens))
    await live.sync_turn(user, reply, TurnMetrics(usage))
    record = live.take_compaction_record()
    assert record is not None and live.compactions == 1
    log.append(ConversationTurn(record, "", None, None, live.resident_turns(), live.usage()[1]))
    restored = provider(Summaries())
    restored.restore_turns(log)
    assert snapshot(restored) == snapshot(live)


def test_a_user_message_that_quotes_the_marker_is_not_a_record() -> None:
    from newt.memory import COMPACTION_MARKER, ConversationTurn, TokenBudget
    from newt.memory.restore import conversation_turns_from_log
    from newt.store import StoredTurn

    def row(i: int, user: str, assistant: str, status: str = "complete") -> StoredTurn:
        return StoredTurn(i, "c", "turn", status, user, assistant, None, None, None, None)  # type: ignore[arg-type]

    log = [
        row(1, "hello", "hi"),
        row(2, COMPACTION_MARKER + " pasted by the user", "", "interrupted"),
    ]
    turns = conversation_turns_from_log(log)
    assert [t.is_compaction for t in turns] == [False, False]
    provider = TokenBudget()
    provider.restore_turns(turns)
    assert provider.resident_turns() == 2
    # without the kind, a record is still recognised by its shape
    assert ConversationTurn(COMPACTION_MARKER + "\nx", "").is_compaction
