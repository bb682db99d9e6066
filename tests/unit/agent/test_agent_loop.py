"""The agentic loop in-process, against the fake OpenAI server and a real SQLite store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from newt.agent import events as ev
from newt.agent.tools.builtin import MAX_TOOL_ROUNDS
from newt.memory import COMPACTION_MARKER, TokenBudget
from newt.recall import RecallRequest
from tests.support.fake_openai import (
    ErrorReply,
    FakeOpenAI,
    Reply,
    llama_server_overflow,
    tools_unsupported,
)
from tests.support.session_helpers import (
    close,
    done_of,
    open_session,
    reply_of,
    run_turn,
)


def notices(events: list[ev.AgentEvent]) -> list[ev.Notice]:
    return [e for e in events if isinstance(e, ev.Notice)]


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
        log = await session.edits.history()
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
        log = await session.edits.history()
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
            async for event in session.turns.send("count slowly"):
                if isinstance(event, ev.TextDelta):
                    got.append(event.text)

        task = asyncio.create_task(consume())
        while len(got) < 2:
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert fake_openai.wait_for_disconnect()
        log = await session.edits.history()
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
        log = await session.edits.history()
        assert log[0].tool_events[0]["name"] == "save_note"
    finally:
        await close(store, session)


async def test_tool_rounds_are_capped_and_the_answer_asked_without_tools(
    fake_openai: FakeOpenAI,
) -> None:
    store, session = await open_session(fake_openai)
    try:
        calls = [
            Reply(text="", tool_calls=[{"name": "recall_memory", "arguments": {"query": q}}])
            for q in ("dog", "dog's name", "greyhound")
        ]
        fake_openai.script(*calls, Reply(text="giving up on tools"))
        events = await run_turn(session, "what is my dog called?")
        assert len([e for e in events if isinstance(e, ev.ToolCallStarted)]) == MAX_TOOL_ROUNDS
        assert len(fake_openai.chat_requests) == MAX_TOOL_ROUNDS + 1
        assert "tools" not in fake_openai.chat_requests[-1].body
        assert done_of(events).status == "complete"
        # every round spent on calls: the model is not offered tools again
        assert any("stops offering it tools" in e.message for e in notices(events))
        fake_openai.script(Reply(text="ok"))
        await run_turn(session, "hello")
        assert "tools" not in fake_openai.chat_requests[-1].body
    finally:
        await close(store, session)


async def test_a_loop_is_cut_at_the_first_repeated_call(fake_openai: FakeOpenAI) -> None:
    """The same call twice is a loop: its answer is asked without tools, and a
    call the server still sends then is not run."""
    store, session = await open_session(fake_openai)
    try:
        looping = Reply(text="", tool_calls=[{"name": "save_note", "arguments": {"action": "add"}}])
        fake_openai.script(looping, looping, looping, Reply(text="never asked"))
        events = await run_turn(session, "What is my greyhound called?")
        assert len([e for e in events if isinstance(e, ev.ToolCallStarted)]) == 2
        assert len(fake_openai.chat_requests) == 3
        assert "tools" not in fake_openai.chat_requests[-1].body
        # the last reply was a call and no text: the turn says so and fails
        error = next(e for e in events if isinstance(e, ev.TurnError))
        assert "no answer" in error.message and done_of(events).status == "failed"
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
        log = await session.edits.history()
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
        await session.conversations.resume(conv_id[:10])
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
    # the whole working set goes out with the capsules before the question
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(Reply(text="Noted, the locker code is 7312."))
        await run_turn(session, "My gym locker code is 7312, keep it in mind.")
        await session.conversations.new_conversation()
        assert isinstance(session.provider, TokenBudget)
        estimate = session.provider.estimator.estimation  # as the turn will count
        fake_openai.script(Reply(text="It is 7312.", prompt_tokens=500))
        events = await run_turn(session, "What was my gym locker code?")
        evidence = [e for e in events if isinstance(e, ev.RetainedEvidence)]
        assert evidence and evidence[0].report.capsules
        assert "7312" in evidence[0].report.capsules[0].excerpt
        sent = fake_openai.chat_requests[-1].body["messages"][-1]["content"]
        assert "7312" in sent and sent.endswith("What was my gym locker code?")
        assert "Said today:\n- user: My gym locker code is 7312, keep it in mind." in sent
        log = await session.edits.history()
        assert log[-1].user == "What was my gym locker code?"
        assert session.last_retention is evidence[0].report
        # the capsules are not part of the conversation: the anchor leaves them
        # out, at what they add inside the user's message (no message glue)
        block = sent.removesuffix("What was my gym locker code?")
        assert estimate.tokens_for(block) > estimate.content_tokens(block) > 0
        assert log[-1].tokens_in == 500 - estimate.content_tokens(block)
        assert session.memory_status().last_reported == log[-1].tokens_in
    finally:
        await close(store, session)


async def test_fetch_record_tool_returns_full_record(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(Reply(text="stored"))
        await run_turn(session, "The blue folder holds the 2019 tax returns.")
        key = f"t{(await session.edits.history())[0].id}"
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
        assert await session.memory_commands.note("likes green tea") == "saved note"
        assert await session.memory_commands.note("likes green tea") == "that note is already saved"
        assert "replaced" in await session.memory_commands.note("replace green => likes black tea")
        listing = await session.memory_commands.note("list")
        assert "1. likes black tea" in listing
        assert "removed" in await session.memory_commands.note("remove black")
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
        md = await session.conversations.export("md")
        data = json.loads(await session.conversations.export("json"))
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
        stream = session.turns.send("greek letters please")
        async for event in stream:
            if isinstance(event, ev.TextDelta):
                break
        await stream.aclose()
        log = await session.edits.history()
        assert log[-1].status == "interrupted" and log[-1].assistant == "alpha "
        assert session.conversation is not None
        assert session.conversation.title == "greek letters please"
    finally:
        await close(store, session)


async def test_resident_turns_are_not_recalled_but_pruned_ones_are(
    fake_openai: FakeOpenAI,
) -> None:
    # 1,200: after the system prompt and the tool schemas there is room for capsules
    config = "[memory]\ncontext_tokens = 1200\n"
    store, session = await open_session(fake_openai, config)
    try:
        fake_openai.script(Reply(text="Noted: the boat is called Pelican."))
        await run_turn(session, "Our sailing boat is called Pelican.")
        fake_openai.script(Reply(text="ok"))
        events = await run_turn(session, "What is the boat called? Pelican?")
        report = next(e for e in events if isinstance(e, ev.RetainedEvidence)).report
        # the first turn is still in the working set: no capsule repeats it
        assert report.capsules == []
        for i in range(16):
            fake_openai.script(Reply(text=f"filler answer {i} " + "blah " * 30))
            await run_turn(session, f"filler question {i} " + "words " * 30)
        first = (await session.edits.history())[0]
        assert session.provider.resident_turns() < 18  # the first turns were pruned
        fake_openai.script(Reply(text="Pelican"))
        events = await run_turn(session, "Remind me: what is the sailing boat called?")
        report = next(e for e in events if isinstance(e, ev.RetainedEvidence)).report
        keys = [c.retrieval_key for c in report.capsules]
        assert f"t{first.id}" in keys
        capsule = report.capsules[keys.index(f"t{first.id}")]
        assert "Pelican" in capsule.excerpt and capsule.role == "user"
        record = await session.fetch_record(capsule.retrieval_key)
        assert record is not None
        assert record.content == "Our sailing boat is called Pelican."
        reply = await session.fetch_record(f"r{first.id}")
        assert reply is not None and reply.content == "Noted: the boat is called Pelican."
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
        log = await session.edits.history()
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
        log = await session.edits.history()
        # the record follows the turn it was made for, as restore expects
        assert [t.kind for t in log[-2:]] == ["turn", "compaction"]
        # recall indexes the record's model-written summary alone: not its frame
        # (the frame's words match nothing) and not the owed part, whose quotes
        # of the user's messages recall holds as records of their own
        record = await session.fetch_record(f"c{log[-1].id}")
        assert record is not None and record.content == ""  # no summary written yet
        found = await session.recall.recall(RecallRequest("reference material context window"))
        assert not [m for m in found.memories if m.source == "compaction"]
        quoted = await session.recall.recall(RecallRequest("question 0 dolor sit amet"))
        assert quoted.memories and all(m.source == "turn" for m in quoted.memories)
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
        log = await session.edits.history()
        turn = [t for t in log if t.kind == "turn"][-1]
        # usage and tool events are those of the attempt that succeeded
        assert (turn.tokens_in, turn.tokens_out, turn.tool_events) == (300, 2, [])
        assert turn.assistant == "final answer"
    finally:
        await close(store, session)


async def test_recall_memory_returns_the_lines_and_a_forgotten_span_is_no_note(
    fake_openai: FakeOpenAI,
) -> None:
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(Reply(text="Lovely."))
        await run_turn(session, "Our greyhound is called Biscuit.")
        call = {"name": "recall_memory", "arguments": {"query": "greyhound"}}
        note = {"name": "save_note", "arguments": {"action": "add", "content": "[forgotten] x"}}
        fake_openai.script(Reply(text="", tool_calls=[call, note]), Reply(text="Biscuit."))
        await run_turn(session, "What is the greyhound called?")
        events = (await session.edits.history())[-1].tool_events
        recalled, saved = events
        assert "- user: Our greyhound is called Biscuit." in recalled["result"]
        # a forgotten span is nothing to keep: the model's note of it is refused
        assert saved["error"] and await store.notes.list() == []
    finally:
        await close(store, session)


async def test_tools_that_would_take_over_a_third_of_a_small_window_are_not_offered(
    fake_openai: FakeOpenAI,
) -> None:
    """At a 1,024-token window newt's tool schemas alone were half of what the
    conversation may fill, and the fullness sat over the budget after every turn."""
    store, session = await open_session(fake_openai, "[memory]\ncontext_tokens = 1024\n")
    try:
        fake_openai.script(Reply(text="Hello."))
        await run_turn(session, "hi")
        assert "tools" not in fake_openai.chat_requests[-1].body
        assert session.memory_status().used <= session.memory_status().budget
    finally:
        await close(store, session)
    store, session = await open_session(fake_openai, "[memory]\ncontext_tokens = 8192\n")
    try:
        fake_openai.script(Reply(text="Hello."))
        await run_turn(session, "hi")
        assert "recall_memory" in str(fake_openai.chat_requests[-1].body["tools"])
    finally:
        await close(store, session)
