"""Pruning into one compaction record (docs/design.md section 4), concrete numbers.

Scenario numbers (chars/4): TokenBudget(1000, 0.5) has a 500-token budget;
a turn of 300 + 300 characters is 150 tokens; a record owing its turns with a
one-digit count is 407 characters, 102 tokens (its 39-token cap holds the
count line, not one of the 300-character messages).
"""

from __future__ import annotations

import asyncio

import pytest

from newt.memory import (
    COMPACTION_MARKER,
    RECORD_EXPLANATION,
    Calibrator,
    MemMessage,
    TokenBudget,
    TokenEstimation,
    TurnMetrics,
    Usage,
    format_record,
    owed_body,
    record_summary,
    summarizer_input,
)
from newt.memory.compaction import (
    OMITTED_NOTE,
    base_summary,
    is_record,
    owed_folds,
    unsummarized_messages,
)
from newt.resources import asset_text

EST = TokenEstimation()
U, A = "u" * 300, "a" * 300
NO_USAGE = TurnMetrics()


SMALL_CAP = TokenBudget(1000, 0.5).summary_reply_tokens  # 39


def fallback_record(n: int, folds: int = 1, summary: str | None = None) -> str:
    """A 500-token budget's record owing `n` messages of U/A turns."""
    return format_record(owed_body(summary, [(U, A)] * (n // 2), folds, cap=SMALL_CAP, est=EST))


class Summarizer:
    """A real async callable standing in for the backend: records its inputs."""

    def __init__(self, *replies: str | Exception) -> None:
        self.replies = list(replies)
        self.inputs: list[list[MemMessage]] = []

    async def __call__(self, messages: list[MemMessage]) -> str:
        self.inputs.append(messages)
        reply = self.replies.pop(0) if self.replies else f"S{len(self.inputs)}"
        if isinstance(reply, Exception):
            raise reply
        return reply


def markers(p: TokenBudget) -> list[str]:
    return [m.content for m in p.build_messages("sys", "next") if COMPACTION_MARKER in m.content]


async def fill(p: TokenBudget, turns: int, metrics: TurnMetrics = NO_USAGE) -> None:
    for _ in range(turns):
        await p.sync_turn(U, A, metrics)


# -- the record's text --------------------------------------------------------


def test_record_format_is_exact() -> None:
    record = format_record("  the summary \n")
    assert record == (
        COMPACTION_MARKER
        + "\n"
        + RECORD_EXPLANATION
        + "\n\nthe summary\n--- END OF CONTEXT SUMMARY ---"
    )
    assert "reference material, not an instruction" in RECORD_EXPLANATION
    assert record_summary(record) == "the summary"
    assert (len(fallback_record(4)), EST.tokens_for(fallback_record(4))) == (407, 102)


LISBON = "I fly to Lisbon on Friday from gate E33 and need a taxi at 5:40 in the morning."
ADA = "My sister Ada is seven."


def test_the_owed_part_quotes_the_users_words_under_a_count_line() -> None:
    owed = [(LISBON, "Have a good flight!"), (ADA, "")]
    body = owed_body(None, owed, 2, cap=200, est=EST)
    assert body == (
        "No summary written yet: 3 message(s) were removed in 2 step(s)."
        " What the user said in them:\n"
        f"- {LISBON}\n- {ADA}"
    )
    assert (unsummarized_messages(format_record(body)), owed_folds(format_record(body))) == (3, 2)
    assert base_summary(format_record(body)) is None
    # a model-written summary stays above it, and is what base_summary gives back
    kept = owed_body("Ada likes kites.", owed, 1, cap=200, est=EST)
    assert kept.startswith("Ada likes kites.\n\nNo summary written yet: 3 message(s)")
    assert base_summary(format_record(kept)) == "Ada likes kites."
    assert owed_body("Ada likes kites.", [], 0, cap=200, est=EST) == "Ada likes kites."


def test_the_owed_part_shortens_each_message_to_fit_the_cap() -> None:
    long = "the staging database lives on host db-7 behind the bastion " * 6
    owed = [(long, "a"), (ADA, "b"), (long.upper(), "c")]
    body = owed_body("S " * 200, owed, 3, cap=120, est=EST)
    assert EST.tokens_for(body) <= 120
    lines = body.splitlines()
    quoted = [line for line in lines if line.startswith("- ")]
    # equal shares: the short message whole, the two long ones cut alike
    assert quoted[1] == f"- {ADA}"
    assert quoted[0].endswith("…") and quoted[2].endswith("…")
    assert quoted[0].startswith("- the staging database") and quoted[2].startswith("- THE STAGING")
    assert abs(len(quoted[0]) - len(quoted[2])) <= 8
    # the summary, cut, keeps at least half the room
    assert lines[0].startswith("S S") and lines[0].endswith("…")


def test_the_oldest_words_are_left_out_first_and_a_tiny_cap_keeps_the_count() -> None:
    owed = [(f"message number {i} about the harbor", "ok") for i in range(12)]
    body = owed_body(None, owed, 1, cap=80, est=EST)
    assert EST.tokens_for(body) <= 80
    assert "- (earlier messages left out)" in body
    assert "message number 11 about the harbor" in body and "message number 0 " not in body
    tiny = owed_body(None, owed, 1, cap=20, est=EST)
    assert tiny == "No summary written yet: 24 message(s) were removed in 1 step(s)."


def test_records_written_before_the_owed_part_still_parse() -> None:
    old = format_record(
        "Ada is seven.\n\nSummary generation was unavailable. 6 message(s) were removed."
    )
    assert (unsummarized_messages(old), owed_folds(old), base_summary(old)) == (
        6,
        1,
        "Ada is seven.",
    )


def test_compaction_prompt_asset() -> None:
    prompt = asset_text("compaction_prompt.md")
    for needle in ("previous summary", "names, numbers", "decisions", "open tasks", "concise"):
        assert needle in prompt


# -- pruning ------------------------------------------------------------------


async def test_prune_without_summarizer_uses_the_fallback_record() -> None:
    p = TokenBudget(1000, 0.5)
    await fill(p, 3)
    assert (p.usage()[1], p.compactions) == (450, 0)
    await fill(p, 1)  # 600 > 500: the two oldest turns go (planned with the record)
    assert p.resident_turns() == 2
    assert p.record == fallback_record(4)
    assert p.usage() == ("tokens", 300 + 102, 500)
    assert (p.compactions, p.total_turns) == (1, 4)
    assert p.take_compaction_record() == fallback_record(4)
    assert p.take_compaction_record() is None  # handed over once

    await fill(p, 1)  # 552: one more turn folds into the same record, a second step
    assert p.record == fallback_record(6, folds=2)
    assert p.usage()[1] == 402
    assert (p.resident_turns(), p.compactions, p.total_turns) == (2, 2, 5)
    assert markers(p) == [fallback_record(6, folds=2)]  # one record, never stacked


async def test_the_newest_turn_stays_unless_it_alone_overflows_the_budget() -> None:
    """Oldest first, and the newest turn stays resident, unless even alone it
    leaves the conversation over its budget: then the fullness would stay over
    the budget after the turn (a tiny window), so it is folded too."""
    p = TokenBudget(1000, 0.5)
    await p.sync_turn("u" * 800, "a" * 800, NO_USAGE)  # 400 tokens
    await p.sync_turn("v" * 800, "b" * 800, NO_USAGE)
    assert p.resident_turns() == 1 and p.record is not None
    assert [m.content[0] for m in p.build_messages("sys", "next")[2:4]] == ["v", "b"]
    await p.sync_turn("w" * 4000, "c" * 4000, NO_USAGE)  # 2,000 tokens alone
    assert p.resident_turns() == 0 and p.used <= p.budget


async def test_anchored_prune_subtracts_estimates_from_the_delta() -> None:
    p = TokenBudget(1000, 0.5)
    await p.sync_turn(U, A, TurnMetrics(Usage(200, 75)))
    await p.sync_turn(U, A, TurnMetrics(Usage(425, 75)))
    assert p.usage()[1] == 500  # at the budget, not over it
    await p.sync_turn(U, A, TurnMetrics(Usage(600, 75)))
    # 675 over 500: two oldest turns (2 x 150) out, the 102-token record in.
    assert p.usage()[1] == 600 + 75 - 300 + 102 == 477
    assert (p.last_reported, p.estimate_delta) == (600, -123)
    assert p.resident_turns() == 1


async def test_summarizer_output_becomes_the_record_and_is_updated() -> None:
    summarize = Summarizer("Ada is seven.", "Ada is seven; likes kites.")
    p = TokenBudget(2000, 0.5).with_summarizer(summarize)  # budget 1,000
    await fill(p, 7)  # 1,050: the two oldest go
    assert p.record == format_record("Ada is seven.")
    system, user = summarize.inputs[0]
    assert (system.role, system.content) == ("system", asset_text("compaction_prompt.md").strip())
    assert user.content.startswith("Previous summary:\n(none)\n\n")
    assert user.content.count("User: " + U + "\nAssistant: " + A) == 2
    assert p.usage()[1] == 5 * 150 + EST.tokens_for(format_record("Ada is seven.")) == 840
    assert p.take_compaction_record() == format_record("Ada is seven.")

    await fill(p, 2)
    assert "Previous summary:\nAda is seven.\n\n" in summarize.inputs[1][1].content
    assert markers(p) == [format_record("Ada is seven; likes kites.")]
    assert p.compactions == 2


async def test_summarizer_failure_never_propagates_and_keeps_the_summary() -> None:
    summarize = Summarizer("Ada is seven.", RuntimeError("backend down"), "   ")
    p = TokenBudget(1000, 0.5).with_summarizer(summarize)
    await fill(p, 4)
    await fill(p, 1)  # the summarizer raises: the owed part under the old summary
    assert record_summary(p.record or "") == (
        "Ada is seven.\n\nNo summary written yet: 2 message(s) were removed in 1 step(s)."
    )
    await fill(p, 1)  # an empty summary counts as a failure too; the count adds up
    assert record_summary(p.record or "").endswith("4 message(s) were removed in 2 step(s).")
    assert p.resident_turns() == 2


async def test_a_cancelled_summary_leaves_the_fold_with_its_fallback_record() -> None:
    # The fold is applied before the summary is awaited, so a cancel can never
    # leave a half-applied fold: the record says what was removed, and the
    # folded turns still await their summary.
    started, never = asyncio.Event(), asyncio.Event()

    async def slow(messages: list[MemMessage]) -> str:
        started.set()
        await never.wait()
        return "unreachable"

    p = TokenBudget(1000, 0.5).with_summarizer(slow)
    await fill(p, 3)
    task = asyncio.create_task(p.sync_turn(U, A, NO_USAGE))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert p.resident_turns() == 2 and p.compactions == 1
    assert (
        record_summary(p.record or "")
        == "No summary written yet: 4 message(s) were removed in 1 step(s)."
    )
    assert p.summary_pending
    assert p.take_compaction_record() == p.record


async def test_a_huge_summary_is_capped_at_a_quarter_of_the_budget() -> None:
    p = TokenBudget(1000, 0.5).with_summarizer(Summarizer("word " * 2000))
    await fill(p, 4)
    assert p.record is not None
    assert EST.tokens_for(p.record) <= 500 // 4
    assert record_summary(p.record).endswith("word…")


async def test_on_pre_compress_output_reaches_the_summarizer() -> None:
    class Extracting(TokenBudget):
        async def on_pre_compress(self, messages: list[MemMessage]) -> str:  # type: ignore[override]
            return f"{len(messages)} messages seen"

    summarize = Summarizer()
    p = Extracting(1000, 0.5).with_summarizer(summarize)
    await fill(p, 4)
    assert "Extracted before compaction:\n4 messages seen\n\n" in summarize.inputs[0][1].content


# -- the summarizer's input ------------------------------------------------------


def total(messages: list[MemMessage]) -> int:
    """The capped part: the user message (the instructions come on top)."""
    return EST.tokens_for(messages[1].content)


def test_summarizer_input_shortens_replies_then_drops_the_oldest() -> None:
    removed = [("a" * 400, "b" * 400), ("c" * 400, "d" * 400), ("e" * 40, "f" * 40)]
    # the user's words all fit: the replies are shortened, no turn is dropped
    messages = summarizer_input("P" * 40, None, removed, cap_tokens=300, est=EST)
    body = messages[1].content
    assert total(messages) <= 300
    assert OMITTED_NOTE not in body and "b" * 400 not in body and "d" * 400 not in body
    assert all(f"User: {u}" in body for u in ("a" * 400, "c" * 400, "e" * 40))
    assert body.index("a" * 400) < body.index("c" * 400) < body.index("e" * 40)
    # not even the user's words fit: the oldest content goes first
    messages = summarizer_input("P" * 40, None, removed, cap_tokens=200, est=EST)
    body = messages[1].content
    assert total(messages) <= 200
    assert OMITTED_NOTE in body
    assert "a" * 400 not in body and "b" * 400 not in body
    assert "User: " + "e" * 40 in body

    roomy = summarizer_input("P" * 40, None, removed, cap_tokens=2000, est=EST)
    assert OMITTED_NOTE not in roomy[1].content and "a" * 400 in roomy[1].content


def test_summarizer_input_keeps_the_tail_of_a_single_oversized_turn() -> None:
    messages = summarizer_input("P", "prev", [("x" * 4000, "")], cap_tokens=200, est=EST)
    body = messages[1].content
    assert total(messages) <= 200
    assert body.startswith("Previous summary:\nprev\n\n") and OMITTED_NOTE in body
    assert 0 < body.count("x") < 4000 and body.endswith("x")


def test_summarizer_input_carries_the_focus() -> None:
    messages = summarizer_input("P", None, [("u", "a")], cap_tokens=100, est=EST, focus="db")
    assert messages[0].content == "P\n\nFocus the summary on: db"


async def test_the_provider_caps_the_summarizer_input_at_half_the_budget() -> None:
    summarize = Summarizer()
    p = TokenBudget(1000, 0.5).with_summarizer(summarize)
    for _ in range(3):
        await p.sync_turn("u" * 800, "a" * 800, NO_USAGE)  # 400 tokens each
    assert summarize.inputs
    assert all(total(messages) <= 250 for messages in summarize.inputs)


# -- /compact and the pre-send guard ------------------------------------------


async def test_compact_folds_all_but_the_newest_turn_with_a_focus() -> None:
    summarize = Summarizer("focused")
    p = TokenBudget(8192, 0.8).with_summarizer(summarize)
    assert await p.compact() is False  # nothing to fold
    await fill(p, 3)
    assert await p.compact("the database choice") is True
    assert summarize.inputs[0][0].content.endswith("Focus the summary on: the database choice")
    assert summarize.inputs[0][1].content.count("User: ") == 2
    assert p.resident_turns() == 1
    assert p.take_compaction_record() == format_record("focused")
    assert p.usage()[1] == 150 + EST.tokens_for(format_record("focused"))
    assert await p.compact() is False  # one turn left


async def test_compact_for_makes_room_for_the_next_request() -> None:
    p = TokenBudget(1000, 0.5)
    for _ in range(3):
        await p.sync_turn("u" * 200, "a" * 200, NO_USAGE)  # 100 tokens each
    assert await p.compact_for(150) is True  # 300 + 150 fits 500: nothing to do
    assert p.take_compaction_record() is None
    assert await p.compact_for(0, limit=250) is True
    # Two turns out, the 102-token record in: 100 + 102.
    assert (p.resident_turns(), p.usage()[1]) == (1, 202)
    assert await p.compact_for(350) is True  # even the newest turn may go here
    assert (p.resident_turns(), p.usage()[1]) == (0, 102)
    # both guard folds are one step: the turn they make room for is still to come
    assert p.take_compaction_record() == fallback_record(6)
    assert p.compactions == 1  # one pending record, superseded, not yet taken
    assert await p.compact_for(450) is False  # 102 + 450 cannot fit 500


async def test_calibrated_glue_does_not_shrink_the_summarizer_input() -> None:
    # 30 tokens of glue per prompt-side message must not be charged to every
    # fragment of the summarizer's input (there it is one message).
    summarize = Summarizer()
    p = TokenBudget(4000, 0.5).with_calibration(Calibrator(4.0, 30.0))  # budget 2,000
    for i in range(8):
        await p.sync_turn(f"question {i} " + "word " * 40, "reply " * 40, NO_USAGE)
    assert summarize.inputs == [] and p.compactions == 0  # no summarizer yet
    p.with_summarizer(summarize)
    assert await p.compact() is True
    body = summarize.inputs[0][1].content
    # 7 turns of ~85 content tokens fit the 1,000-token cap; with 30 tokens of
    # glue charged to each user, reply and separator, only 5 would.
    assert OMITTED_NOTE not in body and body.count("User: question") == 7


# -- summaries off the critical path -------------------------------------------------


async def test_deferred_summaries_fold_at_once_and_summarize_later() -> None:
    summarizer = Summarizer("the user likes tea")
    p = TokenBudget(1000, 0.5).with_summarizer(summarizer).with_deferred_summaries()
    await fill(p, 4)
    # the turn returned without calling the model: the fallback record stands in
    assert summarizer.inputs == []
    assert p.take_compaction_record() == fallback_record(4)
    assert p.summary_pending and p.resident_turns() == 2
    used_before = p.used

    result = await p.summarize_pending()
    assert result is not None and p.record == fallback_record(4)  # nothing applied yet
    assert p.apply_summary(result)
    assert p.record == format_record("the user likes tea")
    assert p.take_compaction_record() == p.record  # the caller persists the new record
    assert not p.summary_pending
    assert p.used == used_before - EST.tokens_for(fallback_record(4)) + EST.tokens_for(p.record)
    # the summarizer saw the folded turns (the newest within its input cap)
    assert len(summarizer.inputs) == 1 and "User: " + U in summarizer.inputs[0][1].content


async def test_a_summary_is_dropped_when_the_conversation_changed_under_it() -> None:
    p = (
        TokenBudget(1000, 0.5)
        .with_summarizer(Summarizer("old conversation"))
        .with_deferred_summaries()
    )
    await fill(p, 4)
    result = await p.summarize_pending()
    p.reset()  # /new while the summary was being written
    assert not p.apply_summary(result)
    assert p.record is None and p.take_compaction_record() is None


async def test_a_summary_applies_to_a_restored_copy_of_the_same_folds() -> None:
    """Another newt reloaded the conversation (same record, same folded turns,
    one turn more): the summary written for those folds still applies there;
    once a different summary took the record, it does not."""
    from newt.memory import ConversationTurn

    live = TokenBudget(1000, 0.5).with_summarizer(Summarizer("S")).with_deferred_summaries()
    log: list[ConversationTurn] = []
    for i in range(5):
        await live.sync_turn(f"{i}{U[1:]}", A, NO_USAGE)
        log.append(ConversationTurn(f"{i}{U[1:]}", A, kind="turn"))
        record = live.take_compaction_record()
        if record is not None:
            log.append(
                ConversationTurn(
                    record,
                    "",
                    resident_turns=live.resident_turns(),
                    used_after=live.used,
                    kind="compaction",
                )
            )
    result = await live.summarize_pending()
    copy = TokenBudget(1000, 0.5).with_summarizer(Summarizer()).with_deferred_summaries()
    copy.restore_turns(log)
    assert copy.apply_summary(result)
    assert record_summary(copy.record or "").startswith("S")

    moved_on = TokenBudget(1000, 0.5).with_summarizer(Summarizer()).with_deferred_summaries()
    moved_on.restore_turns(log)
    assert moved_on.apply_summary(await moved_on.summarize_pending())  # another summary first
    assert not moved_on.apply_summary(result)


async def test_turns_folded_while_a_summary_is_written_stay_counted() -> None:
    p = TokenBudget(1000, 0.5).with_summarizer(Summarizer("S")).with_deferred_summaries()
    await fill(p, 4)
    result = await p.summarize_pending()
    await fill(p, 2)  # two more folds land before the summary is applied
    assert p.apply_summary(result)
    body = record_summary(p.record or "")
    assert body.startswith("S") and body.endswith("4 message(s) were removed in 2 step(s).")
    assert p.summary_pending


async def test_a_reopened_conversation_resumes_the_pending_summary() -> None:
    from newt.memory import ConversationTurn

    live = TokenBudget(1000, 0.5).with_summarizer(Summarizer()).with_deferred_summaries()
    log: list[ConversationTurn] = []
    for i in range(4):
        await live.sync_turn(f"{i}{U[1:]}", A, NO_USAGE)
        log.append(ConversationTurn(f"{i}{U[1:]}", A, kind="turn"))
        record = live.take_compaction_record()
        if record is not None:
            log.append(
                ConversationTurn(
                    record,
                    "",
                    resident_turns=live.resident_turns(),
                    used_after=live.used,
                    kind="compaction",
                )
            )
    summarizer = Summarizer("resumed summary")
    reopened = TokenBudget(1000, 0.5).with_summarizer(summarizer).with_deferred_summaries()
    reopened.restore_turns(log)
    assert reopened.summary_pending
    assert await reopened.refresh_summary()
    sent = summarizer.inputs[0][1].content
    # the folded turns (their replies shortened to fit the input cap), not the resident ones
    assert f"User: 0{U[1:]}" in sent and f"User: 1{U[1:]}" in sent and A not in sent
    assert f"User: 2{U[1:]}" not in sent and f"User: 3{U[1:]}" not in sent
    assert record_summary(reopened.record or "") == "resumed summary"


async def test_fold_steps_make_a_summary_overdue_and_survive_a_reopen() -> None:
    """One turn's folds (its pre-send guard's and its own) are one step; two
    steps owed make the summary overdue; a reopen reads the steps back."""
    from newt.memory import ConversationTurn

    p = TokenBudget(1000, 0.5).with_summarizer(Summarizer()).with_deferred_summaries()
    await fill(p, 3)
    assert await p.compact_for(60)  # the guard folds one turn for the coming one...
    assert p.resident_turns() == 2
    await p.sync_turn(U, A, NO_USAGE)  # ...and the turn itself folds again: one step
    assert p.resident_turns() == 2  # 3 - 1 + 1 - 1
    assert (p.owed_steps, p.summary_overdue) == (1, False)
    await fill(p, 1)
    assert (p.owed_steps, p.summary_overdue) == (2, True)
    record = p.record or ""
    reopened = TokenBudget(1000, 0.5).with_summarizer(Summarizer()).with_deferred_summaries()
    reopened.restore_turns(
        [ConversationTurn(U, A, kind="turn")] * 5
        + [ConversationTurn(record, "", resident_turns=p.resident_turns(), kind="compaction")]
    )
    assert (reopened.owed_steps, reopened.summary_overdue) == (2, True)
    assert await reopened.refresh_summary()
    assert (reopened.owed_steps, reopened.summary_overdue) == (0, False)


def test_a_record_an_older_newt_stored_is_still_read_as_one() -> None:
    # databases keep records written with the marker's literal text: a new
    # marker would turn every stored summary back into a plain user message
    stored = (
        "[CONTEXT COMPACTION — REFERENCE ONLY]\n"
        "Earlier turns of this conversation, folded to fit.\n\n"
        "The user's sister lives in Bergen."
    )
    assert is_record(stored)
    assert record_summary(stored).endswith("The user's sister lives in Bergen.")
    assert not is_record("CONTEXT COMPACTION is a phrase the user may type")
