"""The agentic loop in-process, against the fake OpenAI server and a real SQLite store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from newt.agent import events as ev
from newt.agent.focus import answered_by_evidence, focus_evidence, focused, users_words
from newt.agent.session import ChatSession
from newt.chat_settings import ChatSettings
from newt.memory import COMPACTION_MARKER
from newt.memory.types import MemMessage
from newt.recall import EvidenceCapsule, RetentionReport
from newt.recall.presentation import EVIDENCE_HEADER, FOCUSED_HEADER, evidence_block
from newt.store import Store
from tests.agent_helpers import done_of, make_config, reply_of, run_turn
from tests.fake_openai import (
    ErrorReply,
    FakeOpenAI,
    Reply,
    llama_server_overflow,
    tools_unsupported,
)


async def open_session(fake: FakeOpenAI, config_text: str = "") -> tuple[Store, ChatSession]:
    config = make_config(fake.base_url, config_text)
    assert config.db_path is not None
    store = await Store.open(config.db_path)
    session = await ChatSession.open(config, store)
    return store, session


async def close(store: Store, session: ChatSession) -> None:
    await session.close()
    await store.close()


async def test_one_turn_streams_persists_and_reports_usage(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(
            Reply(text="Hello there, friend.", prompt_tokens=57, completion_tokens=5)
        )
        events = await run_turn(session, "hi newt")
        assert reply_of(events) == "Hello there, friend."
        deltas = [e for e in events if isinstance(e, ev.TextDelta)]
        assert len(deltas) > 1  # streamed, not one lump
        done = done_of(events)
        assert done.status == "complete" and done.usage is not None
        assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (57, 5)
        body = fake_openai.chat_requests[-1].body
        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
        assert body["messages"][0]["role"] == "system"
        assert body["messages"][-1] == {"role": "user", "content": "hi newt"}
        assert {t["function"]["name"] for t in body["tools"]} == {
            "save_note",
            "recall_memory",
            "fetch_record",
        }
        log = await session.history()
        assert [
            (t.kind, t.status, t.user, t.assistant, t.tokens_in, t.tokens_out) for t in log
        ] == [("turn", "complete", "hi newt", "Hello there, friend.", 57, 5)]
        status = session.memory_status()
        # anchored: the reported prompt plus the reply not yet in any report
        assert status.used == 57 + 5
        assert status.last_reported == 57
    finally:
        await close(store, session)


async def test_history_is_sent_on_the_next_turn(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(Reply(text="Paris."), Reply(text="About 2.1 million."))
        await run_turn(session, "capital of France?")
        await run_turn(session, "population?")
        messages = fake_openai.chat_requests[-1].body["messages"]
        roles = [(m["role"], m["content"]) for m in messages[1:]]
        assert roles[:2] == [("user", "capital of France?"), ("assistant", "Paris.")]
        assert roles[-1][0] == "user" and roles[-1][1].endswith("population?")
    finally:
        await close(store, session)


async def test_failed_request_keeps_the_users_words(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai, "[backend]\nmax_retries = 0\n")
    try:
        fake_openai.script(ErrorReply(500, {"error": {"message": "kaput"}}))
        events = await run_turn(session, "please remember this long question")
        errors = [e for e in events if isinstance(e, ev.TurnError)]
        assert len(errors) == 1 and errors[0].retryable
        assert done_of(events).status == "failed"
        log = await session.history()
        assert log[-1].status == "failed" and log[-1].user == "please remember this long question"
        # the provider did not take the failed turn; a retry works
        fake_openai.script(Reply(text="answer"))
        events = await run_turn(session, "please remember this long question")
        assert done_of(events).status == "complete"
    finally:
        await close(store, session)


async def test_cancel_mid_stream_keeps_partial_reply(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(
            Reply(
                text="one two three four five six seven eight nine ten", chunk_size=4, delay_s=0.2
            )
        )
        got: list[str] = []

        async def consume() -> None:
            async for event in session.send("count slowly"):
                if isinstance(event, ev.TextDelta):
                    got.append(event.text)

        task = asyncio.create_task(consume())
        while len(got) < 2:
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert fake_openai.wait_for_disconnect()
        log = await session.history()
        assert log[-1].status == "interrupted"
        assert log[-1].assistant == "".join(got) and log[-1].assistant
        assert session.provider.resident_turns() == 1
    finally:
        await close(store, session)


async def test_tool_calls_run_and_feed_back(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(
            Reply(
                text="",
                tool_calls=[
                    {
                        "name": "save_note",
                        "arguments": {"action": "add", "content": "User is allergic to nuts"},
                    }
                ],
            ),
            Reply(text="Noted: no nuts."),
        )
        events = await run_turn(session, "I'm allergic to nuts, remember that")
        started = [e for e in events if isinstance(e, ev.ToolCallStarted)]
        finished = [e for e in events if isinstance(e, ev.ToolCallFinished)]
        assert [e.name for e in started] == ["save_note"]
        assert finished[0].result == "saved" and not finished[0].error
        assert reply_of(events).endswith("Noted: no nuts.")
        assert await store.notes.list() == ["User is allergic to nuts"]
        second = fake_openai.chat_requests[-1].body["messages"]
        assert second[-2]["role"] == "assistant" and second[-2]["tool_calls"]
        assert second[-1]["role"] == "tool" and second[-1]["content"] == "saved"
        # the note now rides in the system prompt
        fake_openai.script(Reply(text="ok"))
        await run_turn(session, "what can't I eat?")
        assert (
            "User is allergic to nuts"
            in fake_openai.chat_requests[-1].body["messages"][0]["content"]
        )
        log = await session.history()
        assert log[0].tool_events[0]["name"] == "save_note"
    finally:
        await close(store, session)


async def test_tool_rounds_are_capped_at_eight(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai)
    try:
        looping = Reply(
            text="", tool_calls=[{"name": "recall_memory", "arguments": {"query": "anything"}}]
        )
        fake_openai.script(*([looping] * 8), Reply(text="giving up on tools"))
        events = await run_turn(session, "loop forever")
        assert len([e for e in events if isinstance(e, ev.ToolCallStarted)]) == 8
        assert len(fake_openai.chat_requests) == 9
        assert "tools" not in fake_openai.chat_requests[-1].body
        assert done_of(events).status == "complete"
    finally:
        await close(store, session)


async def test_tools_rejected_retry_without_and_remember(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(tools_unsupported(), Reply(text="fine without tools"))
        events = await run_turn(session, "hello")
        assert reply_of(events) == "fine without tools"
        assert any(isinstance(e, ev.Notice) for e in events)
        assert "tools" in fake_openai.chat_requests[0].body
        assert "tools" not in fake_openai.chat_requests[1].body
        cap = await store.capabilities.get(session.base_url, session.model)
        assert cap is not None and cap.supports_tools is False
    finally:
        await close(store, session)
    # a new session remembers
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(Reply(text="still fine"))
        await run_turn(session, "again")
        assert "tools" not in fake_openai.chat_requests[-1].body
    finally:
        await close(store, session)


async def test_context_overflow_compacts_and_retries_once(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai)
    try:
        for i in range(4):
            fake_openai.script(Reply(text=f"reply {i} " + "words " * 40))
            await run_turn(session, f"question {i} " + "filler " * 40)
        fake_openai.script(
            llama_server_overflow(prompt_tokens=3000, context_window=2048),
            Reply(text="made it"),
            Reply(text="Summary: four questions with filler were asked."),  # the summarizer
        )
        events = await run_turn(session, "one more")
        assert reply_of(events) == "made it"
        compacted = [e for e in events if isinstance(e, ev.Compacted)]
        assert compacted and compacted[0].reason == "overflow"
        # the retry went out with the fallback record: no wait for a summary
        assert "message(s) were removed" in compacted[0].record
        cap = await store.capabilities.get(session.base_url, session.model)
        assert cap is not None and cap.overflow_at == 3000 and cap.safe_context == 2250
        retry = fake_openai.chat_requests[-1].body["messages"]
        assert len(retry) < len(fake_openai.chat_requests[-2].body["messages"])
        # the summary is written after the reply and stored as the newest record
        assert await session.summaries.wait(10)
        assert fake_openai.chat_requests[-1].body.get("stream") is not True
        log = await session.history()
        records = [t for t in log if t.kind == "compaction"]
        assert len(records) == 2
        assert "Summary: four questions with filler were asked." in records[-1].user
    finally:
        await close(store, session)


async def test_second_overflow_surfaces(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(llama_server_overflow(), llama_server_overflow())
        events = await run_turn(session, "too big")
        errors = [e for e in events if isinstance(e, ev.TurnError)]
        assert len(errors) == 1 and errors[0].kind == "ContextLengthExceededError"
        assert len(fake_openai.chat_requests) == 2
    finally:
        await close(store, session)


async def test_compaction_is_persisted_and_restored_identically(
    fake_openai: FakeOpenAI,
) -> None:
    config = "[memory]\ncontext_tokens = 600\n[recall]\nretained_token_budget = 0\n"
    store, session = await open_session(fake_openai, config)
    try:
        compactions = 0
        for i in range(12):
            fake_openai.script(Reply(text=f"answer {i}: " + "lorem ipsum dolor " * 6))
            events = await run_turn(session, f"question {i}: " + "tell me more " * 8)
            compactions += len([e for e in events if isinstance(e, ev.Compacted)])
        assert compactions >= 2
        before = session.memory_status()
        messages_before = session.provider.build_messages("SYS", "next")
        conv_id = session.conversation.id if session.conversation else ""
    finally:
        await close(store, session)
    store, session = await open_session(fake_openai, config)
    try:
        await session.resume(conv_id[:10])
        after = session.memory_status()
        assert (after.used, after.budget, after.resident_turns) == (
            before.used,
            before.budget,
            before.resident_turns,
        )
        assert session.provider.build_messages("SYS", "next") == messages_before
    finally:
        await close(store, session)


async def test_recall_evidence_rides_in_the_request_only(fake_openai: FakeOpenAI) -> None:
    # the whole working set goes out (a focused question is counted by estimate)
    store, session = await open_session(fake_openai, '[recall]\nfocus_questions = "off"\n')
    try:
        fake_openai.script(Reply(text="Noted, the locker code is 7312."))
        await run_turn(session, "My gym locker code is 7312, keep it in mind.")
        await session.new_conversation()
        fake_openai.script(Reply(text="It is 7312.", prompt_tokens=500))
        events = await run_turn(session, "What was my gym locker code?")
        evidence = [e for e in events if isinstance(e, ev.RetainedEvidence)]
        assert evidence and evidence[0].report.capsules
        assert "7312" in evidence[0].report.capsules[0].excerpt
        sent = fake_openai.chat_requests[-1].body["messages"][-1]["content"]
        assert "7312" in sent and sent.endswith("What was my gym locker code?")
        log = await session.history()
        assert log[-1].user == "What was my gym locker code?"
        assert session.last_retention is evidence[0].report
        # the capsules are not part of the conversation: the anchor leaves them out
        # (estimated when the turn finished; the calibrated estimate moves as it learns)
        left_out = 500 - (log[-1].tokens_in or 0)
        assert len(evidence_block(evidence[0].report)) // 8 < left_out < 500
        assert session.memory_status().last_reported == log[-1].tokens_in
    finally:
        await close(store, session)


async def told_gym_code(fake_openai: FakeOpenAI, session: ChatSession) -> None:
    """The user told the locker code in a conversation, then started a new one."""
    fake_openai.script(Reply(text="Noted."))
    await run_turn(session, "My gym locker code is 7312, keep it in mind.")
    await session.new_conversation()


async def test_a_question_recall_answers_goes_out_with_its_evidence_alone(
    fake_openai: FakeOpenAI,
) -> None:
    store, session = await open_session(fake_openai)
    try:
        await told_gym_code(fake_openai, session)
        for n in range(3):
            fake_openai.script(Reply(text=f"Soup answer {n}."))
            await run_turn(session, f"Soup question {n}: what goes in a minestrone?")
        fake_openai.script(Reply(text="It is 7312.", prompt_tokens=90))
        events = await run_turn(session, "What was my gym locker code?")
        assert [e.focused for e in events if isinstance(e, ev.RetainedEvidence)] == [True]
        body = fake_openai.chat_requests[-1].body
        sent = body["messages"]
        assert [m["role"] for m in sent] == ["system", "user"]
        assert "7312" in sent[-1]["content"] and "fetch_record" not in sent[-1]["content"]
        # in the user's voice: "Earlier I told you:" and their words bare
        assert sent[-1]["content"].startswith(FOCUSED_HEADER + "\n- My gym locker code is 7312")
        assert sent[-1]["content"].endswith("What was my gym locker code?")
        # a lookup is asked at the focus temperature; the chat turns at the server's own
        assert body["temperature"] == 0.0
        assert all("temperature" not in r.body for r in fake_openai.chat_requests[:-1])
        # the sidebar and /memory, redrawn later, still say so
        assert session.last_focused and session.memory_status().last_focused
        # the working set is whole for the next turn, and this turn was not
        # anchored on the small request's size
        log = await session.history()
        assert log[-1].tokens_in is None
        fake_openai.script(Reply(text="Beans."))
        await run_turn(session, "And what else goes in a minestrone besides beans?")
        body = fake_openai.chat_requests[-1].body
        sent = body["messages"]
        assert "Soup question 0: what goes in a minestrone?" in [m["content"] for m in sent]
        assert sent[-2]["content"] == "It is 7312."
        assert "temperature" not in body
        assert not session.last_focused
    finally:
        await close(store, session)


async def test_a_focused_request_leaves_out_capsules_that_do_not_answer(
    fake_openai: FakeOpenAI,
) -> None:
    store, session = await open_session(fake_openai)
    try:
        await told_gym_code(fake_openai, session)
        fake_openai.script(Reply(text="Noted."))
        await run_turn(session, "The combination for my bike lock is 4140.")
        await session.new_conversation()
        fake_openai.script(Reply(text="It is 7312."))
        # one word short of the gym capsule; the bike capsule holds only
        # "combination" (recalled: without the narrowing 4140 is sent too)
        events = await run_turn(session, "What was my gym locker combination?")
        sent = fake_openai.chat_requests[-1].body["messages"]
        assert [m["role"] for m in sent] == ["system", "user"]
        assert "7312" in sent[-1]["content"] and "4140" not in sent[-1]["content"]
        shown = [e for e in events if isinstance(e, ev.RetainedEvidence)]
        assert shown[0].focused
        assert [c.excerpt for c in shown[0].report.capsules] == [
            "User: My gym locker code is 7312, keep it in mind."
        ]
        assert session.last_retention is shown[0].report  # /memory shows what was sent
        # not a lookup: both capsules go with the whole working set
        fake_openai.script(Reply(text="Both."))
        await run_turn(session, "Tell me about the gym locker combination and the bike lock.")
        content = fake_openai.chat_requests[-1].body["messages"][-1]["content"]
        assert "7312" in content and "4140" in content
    finally:
        await close(store, session)


async def test_a_question_the_working_set_still_speaks_to_is_not_focused(
    fake_openai: FakeOpenAI,
) -> None:
    store, session = await open_session(fake_openai)
    try:
        await told_gym_code(fake_openai, session)
        fake_openai.script(Reply(text="Noted, 8080 now."))
        await run_turn(session, "They changed my gym locker code to 8080 today.")
        fake_openai.script(Reply(text="Soup."))
        await run_turn(session, "What goes in a minestrone?")
        fake_openai.script(Reply(text="It is 8080."))
        await run_turn(session, "What is my gym locker code?")
        body = fake_openai.chat_requests[-1].body
        sent = [m["content"] for m in body["messages"]]
        # the old code is recalled, and the change the user made is sent beside it
        assert "7312" in sent[-1] and sent[-1].startswith(EVIDENCE_HEADER)
        assert "They changed my gym locker code to 8080 today." in sent
        assert "temperature" not in body
    finally:
        await close(store, session)


@pytest.mark.parametrize(
    ("config", "settings", "expected"),
    [
        ("", ChatSettings(), 0.0),  # a lookup: the most likely answer
        ("focus_temperature = 0.5\n", ChatSettings(), 0.5),
        ("", ChatSettings(temperature=1.1), 1.1),  # the conversation's own choice wins
        ("focus_temperature = -1\n", ChatSettings(), None),  # the server's default
    ],
)
async def test_a_focused_questions_temperature(
    fake_openai: FakeOpenAI, config: str, settings: ChatSettings, expected: float | None
) -> None:
    store, session = await open_session(fake_openai, "[recall]\n" + config)
    try:
        await told_gym_code(fake_openai, session)
        await session.update_settings(settings)
        fake_openai.script(Reply(text="It is 7312."))
        await run_turn(session, "What was my gym locker code?")
        body = fake_openai.chat_requests[-1].body
        assert len(body["messages"]) == 2  # focused: system prompt and the question
        assert body.get("temperature") == expected
    finally:
        await close(store, session)


def test_only_a_short_question_one_capsule_answers_is_focused() -> None:
    capsule = EvidenceCapsule("t1", "t1", "User: My gym locker code is 7312.", 9, 1.0, 5.0)
    report = RetentionReport(100, 9, [capsule])
    assert answered_by_evidence("What was my gym locker code?", report)
    # asked with one word the telling lacked: still that capsule's question
    assert answered_by_evidence("What was my gym locker combination?", report)
    assert not answered_by_evidence("What was my bike padlock code?", report)  # two words short
    assert not answered_by_evidence("What was my bike locker combination?", report)
    assert not answered_by_evidence("Tell me my gym locker code.", report)  # not a question
    assert not answered_by_evidence("What was my gym locker code?", None)
    long = "What was my gym locker code? " + "and more words " * 10 + "locker?"
    assert not answered_by_evidence(long, report)
    # one search word leans on what came before ("And the gym one?")
    assert not answered_by_evidence("And the locker one?", report)
    # the working set still holds a statement with every word of the question
    said = ["Soup again?", "Update: my gym locker code is now 8080."]
    assert not answered_by_evidence("What was my gym locker code?", report, said)
    assert answered_by_evidence("What was my gym locker code?", report, said[:1])
    # ... or as many of them as the capsule holds
    said = ["The gym locker number changed, it is 8080."]
    assert not answered_by_evidence("What was my gym locker combination?", report, said)
    # ... or as many as a capsule needs (one short), like a capsule would
    said = ["The locker code changed to 8080."]
    assert not answered_by_evidence("What was my gym locker code?", report, said)
    # the same question asked before tells nothing: it does not keep the history
    said = ["What was my gym locker code?", "Which is my gym locker code? It changed."]
    assert answered_by_evidence("What was my gym locker code?", report, said[:1])
    assert not answered_by_evidence("What was my gym locker code?", report, said)
    # a question carrying a number may be telling it
    said = ["Is my gym locker code 8080 now?"]
    assert not answered_by_evidence("What was my gym locker code?", report, said)
    # stop words only lean on what came before, whatever a capsule holds
    chatty = EvidenceCapsule("t2", "t2", "User: what was it again, again?", 9, 1.0, 5.0)
    assert not answered_by_evidence("What was it again?", RetentionReport(100, 9, [chatty]))
    msgs = [MemMessage("system", "S"), MemMessage("user", COMPACTION_MARKER + " x")]
    msgs += [MemMessage("user", "u1"), MemMessage("assistant", "a1")]
    msgs += [MemMessage("user", "u2"), MemMessage("assistant", "a2"), MemMessage("user", "q")]
    assert [m.content for m in focused(msgs)] == ["S", "q"]
    assert users_words(msgs) == ["u1", "u2"]


def test_a_focused_question_goes_out_with_the_capsules_that_answer_it() -> None:
    """Beside "The safe in the east office opens with 2058." SmolLM2 answered
    with the garage's code, which shares only "code" with the question."""
    safe = EvidenceCapsule("t1", "t1", "The safe in the east office opens with 2058.", 12, 1.0, 2.0)
    garage = EvidenceCapsule("t2", "t2", "The garage door keypad code is 1613.", 10, 1.0, 3.0)
    same = EvidenceCapsule("t3", "t3", "At the east office the safe opens with 2058.", 12, 0.5, 1.0)
    report = RetentionReport(100, 34, [safe, garage, same], candidates_examined=5)
    focus = focus_evidence("What is the safe code in the east office?", report)
    assert focus is not None and [c.id for c in focus.capsules] == ["t1", "t3"]
    # what was sent: the sidebar counts the one left out as dropped
    assert (focus.retained_tokens, focus.dropped, focus.candidates_examined) == (24, 1, 5)
    assert [c.id for c in report.capsules] == ["t1", "t2", "t3"]  # the report is untouched
    garage_only = focus_evidence("What is the garage keypad code?", report)
    assert garage_only is not None and [c.id for c in garage_only.capsules] == ["t2"]
    assert focus_evidence("What is my padlock number?", report) is None


def test_a_time_question_is_held_by_the_time_it_asks_for() -> None:
    """ "What time is my piano lesson on Saturday?" for "On Saturday I have
    piano at 2:50.": two words away, but the clock time answers "time"."""
    piano = EvidenceCapsule("t1", "t1", "User: On Saturday I have piano at 2:50.", 12, 1.0, 2.0)
    report = RetentionReport(100, 12, [piano])
    assert answered_by_evidence("What time is my piano lesson on Saturday?", report)
    assert answered_by_evidence("At what hour is my piano lesson on Saturday?", report)
    # without a time in the capsule, "time" is one more word it lacks
    vague = EvidenceCapsule("t2", "t2", "User: On Saturday I have piano as usual.", 12, 1.0, 2.0)
    assert not answered_by_evidence(
        "What time is my piano lesson on Saturday?", RetentionReport(100, 12, [vague])
    )
    # a time on another day is still two words short
    assert not answered_by_evidence("What time is my piano lesson on Sunday?", report)
    # "code" is not a value word: a sibling's digits must not answer for it
    west = EvidenceCapsule("t3", "t3", "The safe in the west office opens with 5094.", 12, 1.0, 2.0)
    assert not answered_by_evidence(
        "What is the safe code in the east office?", RetentionReport(100, 12, [west])
    )
    # the guard counts the same way: the time told in the working set keeps it
    said = ["Piano moved: on Saturday it is at 4 pm now."]
    assert not answered_by_evidence("What time is my piano lesson on Saturday?", report, said)


def test_a_focused_capsule_is_cut_to_the_sentences_that_answer() -> None:
    """A fact told inside a longer turn goes out as its own sentence: beside
    the rest of the turn SmolLM2 talked about the meeting instead."""
    told = (
        "User: Quick update: the meeting ran long again. On Monday the blue recycling bin"
        " goes out at 8:20. Anyway, I still need to pack.\nAssistant: Noted, good luck!"
    )
    turn = EvidenceCapsule("t1", "t1", told, 40, 1.0, 2.0, "user")
    focus = focus_evidence(
        "When is the blue recycling bin collected on Monday?", RetentionReport(100, 40, [turn])
    )
    assert focus is not None
    [cut] = focus.capsules
    assert cut.excerpt == "User: On Monday the blue recycling bin goes out at 8:20."
    assert cut.tokens < turn.tokens and focus.retained_tokens == cut.tokens
    # a fact spread over two sentences stays whole: no sentence answers alone
    spread = "User: The amber harbor has lockers. Mine opens with code 4417, I think."
    both = EvidenceCapsule("t2", "t2", spread, 20, 1.0, 2.0, "user")
    kept = focus_evidence(
        "What is my locker code at the amber harbor?", RetentionReport(100, 20, [both])
    )
    assert kept is not None and kept.capsules == [both]
    # a note or a reply is not a turn of the user's: left as recalled
    note = EvidenceCapsule("n1", "n1", "Chat. The safe code is 2058. More.", 20, 1.0, 2.0)
    noted = focus_evidence("What is the safe code?", RetentionReport(100, 20, [note]))
    assert noted is not None and noted.capsules == [note]


async def test_fetch_record_tool_returns_full_record(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(Reply(text="stored"))
        await run_turn(session, "The blue folder holds the 2019 tax returns.")
        key = f"t{(await session.history())[0].id}"
        fake_openai.script(
            Reply(text="", tool_calls=[{"name": "fetch_record", "arguments": {"key": key}}]),
            Reply(text="done"),
        )
        events = await run_turn(session, "what's in the blue folder?")
        finished = [e for e in events if isinstance(e, ev.ToolCallFinished)]
        assert "The blue folder holds the 2019 tax returns." in finished[0].result
        record = await session.fetch_record(key)
        assert record is not None and "2019 tax returns" in record.content
    finally:
        await close(store, session)


async def test_note_command_language(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai)
    try:
        assert await session.note("likes green tea") == "saved note"
        assert await session.note("likes green tea") == "that note is already saved"
        assert "replaced" in await session.note("replace green => likes black tea")
        listing = await session.note("list")
        assert "1. likes black tea" in listing
        assert "removed" in await session.note("remove black")
        assert await store.notes.list() == []
    finally:
        await close(store, session)


async def test_export_has_no_secrets(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SUPERSECRET-0042")
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(Reply(text="hi"))
        await run_turn(session, "hello")
        assert fake_openai.chat_requests[-1].headers["authorization"] == (
            "Bearer sk-test-SUPERSECRET-0042"
        )
        md = await session.export("md")
        data = json.loads(await session.export("json"))
        assert "## User" in md and data["turns"][0]["user"] == "hello"
        assert "SUPERSECRET" not in md and "SUPERSECRET" not in json.dumps(data)
        db_path = session.config.db_path
    finally:
        await close(store, session)
    assert db_path is not None
    for path in Path(db_path).parent.iterdir():
        assert b"SUPERSECRET" not in path.read_bytes(), path


async def test_closing_the_event_stream_keeps_the_partial_reply(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(Reply(text="alpha beta gamma delta epsilon", chunk_size=6, delay_s=0.05))
        stream = session.send("greek letters please")
        async for event in stream:
            if isinstance(event, ev.TextDelta):
                break
        await stream.aclose()
        log = await session.history()
        assert log[-1].status == "interrupted" and log[-1].assistant == "alpha "
        assert session.conversation is not None
        assert session.conversation.title == "greek letters please"
    finally:
        await close(store, session)


async def test_resident_turns_are_not_recalled_but_pruned_ones_are(
    fake_openai: FakeOpenAI,
) -> None:
    config = "[memory]\ncontext_tokens = 600\n"
    store, session = await open_session(fake_openai, config)
    try:
        fake_openai.script(Reply(text="Noted: the boat is called Pelican."))
        await run_turn(session, "Our sailing boat is called Pelican.")
        fake_openai.script(Reply(text="ok"))
        events = await run_turn(session, "What is the boat called? Pelican?")
        report = next(e for e in events if isinstance(e, ev.RetainedEvidence)).report
        # the first turn is still in the working set: no capsule repeats it
        assert report.capsules == []
        for i in range(10):
            fake_openai.script(Reply(text=f"filler answer {i} " + "blah " * 30))
            await run_turn(session, f"filler question {i} " + "words " * 30)
        first = (await session.history())[0]
        assert session.provider.resident_turns() < 12  # the first turns were pruned
        fake_openai.script(Reply(text="Pelican"))
        events = await run_turn(session, "Remind me: what is the sailing boat called?")
        report = next(e for e in events if isinstance(e, ev.RetainedEvidence)).report
        keys = [c.retrieval_key for c in report.capsules]
        assert f"t{first.id}" in keys
        capsule = report.capsules[keys.index(f"t{first.id}")]
        assert "Pelican" in capsule.excerpt
        record = await session.fetch_record(capsule.retrieval_key)
        assert record is not None
        assert record.content == (
            "User: Our sailing boat is called Pelican.\n"
            "Assistant: Noted: the boat is called Pelican."
        )
    finally:
        await close(store, session)


async def test_learned_estimate_is_kept_per_model(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai)
    try:
        for i in range(3):
            fake_openai.script(Reply(text=f"reply number {i} with some words"))
            await run_turn(session, f"question {i}: how are the tokens counted here?")
        cap = await store.capabilities.get(session.base_url, session.model)
        assert cap is not None and cap.chars_per_token is not None
        learned = cap.chars_per_token
        assert cap.per_message_tokens is not None and cap.per_reply_tokens is not None
        glue = (cap.per_message_tokens, cap.per_reply_tokens)
    finally:
        await close(store, session)
    store, session = await open_session(fake_openai)
    try:
        # a new session starts from the ratio learned for this model
        calibrator = session.provider.calibrator  # type: ignore[attr-defined]
        assert calibrator.chars_per_token == learned
        assert (calibrator.per_message_tokens, calibrator.per_reply_tokens) == glue
    finally:
        await close(store, session)


async def test_malformed_stream_keeps_the_partial_reply(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(
            Reply(text="first part, then garbage", chunk_size=5, malformed_at_chunk=3)
        )
        events = await run_turn(session, "go")
        errors = [e for e in events if isinstance(e, ev.TurnError)]
        assert errors and errors[0].kind == "MalformedStreamError"
        assert done_of(events).status == "interrupted"
        log = await session.history()
        assert log[-1].status == "interrupted" and log[-1].assistant == "first part, the"
    finally:
        await close(store, session)


async def test_pre_send_guard_compacts_before_a_prompt_that_would_not_fit(
    fake_openai: FakeOpenAI,
) -> None:
    config = "[memory]\ncontext_tokens = 2048\n[recall]\nretained_token_budget = 0\n"
    store, session = await open_session(fake_openai, config)
    try:
        for i in range(4):
            fake_openai.script(Reply(text=f"answer {i} " + "lorem ipsum " * 40))
            await run_turn(session, f"question {i} " + "dolor sit amet " * 30)
        assert session.memory_status().compactions == 0
        before = len(fake_openai.chat_requests[-1].body["messages"])
        fake_openai.script(Reply(text="Summary of the four earlier questions."), Reply(text="ok"))
        events = await run_turn(session, "please read this long text: " + "word " * 1200)
        compacted = [e for e in events if isinstance(e, ev.Compacted)]
        assert [c.reason for c in compacted] == ["guard"]
        sent = fake_openai.chat_requests[-1].body["messages"]
        assert len(sent) < before and sent[1]["content"].startswith(COMPACTION_MARKER)
        log = await session.history()
        # the record follows the turn it was made for, as restore expects
        assert [t.kind for t in log[-2:]] == ["turn", "compaction"]
    finally:
        await close(store, session)


async def test_overflow_in_a_later_tool_round_retries_afresh(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(Reply(text="earlier"), Reply(text="earlier again"))
        await run_turn(session, "one")
        await run_turn(session, "two")
        fake_openai.script(
            Reply(
                text="",
                prompt_tokens=900,
                tool_calls=[{"name": "recall_memory", "arguments": {"query": "x"}}],
            ),
            llama_server_overflow(prompt_tokens=5000, context_window=4096),
            Reply(text="final answer", prompt_tokens=300, completion_tokens=2),
            Reply(text="Summary."),  # the summarizer, after the reply
        )
        events = await run_turn(session, "three")
        assert done_of(events).status == "complete"
        log = await session.history()
        turn = [t for t in log if t.kind == "turn"][-1]
        # usage and tool events are those of the attempt that succeeded
        assert (turn.tokens_in, turn.tokens_out, turn.tool_events) == (300, 2, [])
        assert turn.assistant == "final answer"
    finally:
        await close(store, session)
