"""A model newt runs itself is asked once whether it uses tools well (it calls one when
asked, and answers from the memory in front of it with newt's tools offered);
one that does not is not offered them. The fake server stands in for llama-server:
`server_context_tokens` set is what marks a server newt runs."""

from __future__ import annotations

import pytest

from newt.agent.session.chat_session import ChatSession
from newt.agent.tools.probe import MEMORY_FACT, MEMORY_QUESTION, PROBE_TOOL
from newt.store import Store
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply
from tests.support.session_helpers import make_config, run_turn


async def open_local(fake: FakeOpenAI, store: Store | None = None) -> tuple[Store, ChatSession]:
    config = make_config(fake.base_url)
    config.server_context_tokens = 4096  # as ManagedLocal sets it for its llama-server
    assert config.db_path is not None
    store = store or await Store.open(config.db_path)
    return store, await ChatSession.open(config, store)


def probes(requests: list[RecordedRequest]) -> list[RecordedRequest]:
    return [
        r
        for r in requests
        if [t["function"]["name"] for t in r.body.get("tools") or []] == [PROBE_TOOL]
    ]


async def test_a_model_that_calls_no_tool_is_not_offered_them_and_is_asked_once(
    fake_openai: FakeOpenAI,
) -> None:
    store, session = await open_local(fake_openai)
    try:
        fake_openai.script(Reply(text="It is sunny in Oslo."), Reply(text="Hello!"))
        await run_turn(session, "hi")
        first, turn = fake_openai.chat_requests
        assert probes([first]) and first.body.get("max_tokens", 0) <= 64
        assert "tools" not in turn.body  # not offered
        await run_turn(session, "and again")
        assert "tools" not in fake_openai.chat_requests[-1].body
        assert len(probes(fake_openai.chat_requests)) == 1
    finally:
        await session.close()
    # the next run's server has another port: the verdict is kept under the model's name
    other = FakeOpenAI().start()
    try:
        _, session2 = await open_local(other, store)
        await run_turn(session2, "hi again")
        assert not probes(other.chat_requests) and "tools" not in other.chat_requests[-1].body
        await session2.close()
    finally:
        other.stop()
        await store.close()


async def test_a_model_that_writes_the_call_as_text_and_answers_from_memory_gets_the_tools(
    fake_openai: FakeOpenAI,
) -> None:
    store, session = await open_local(fake_openai)
    try:
        call = '```json\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n```'
        fake_openai.script(Reply(text=call), Reply(text="Your cat is Miso."), Reply(text="Hello!"))
        await run_turn(session, "hi")
        probe, memory, turn = fake_openai.chat_requests
        assert probes([probe])
        # the second probe: newt's own tools, the fact recalled into the request
        asked = memory.body["messages"][-1]["content"]
        assert MEMORY_FACT in asked and asked.endswith(MEMORY_QUESTION)
        assert "recall_memory" in str(memory.body["tools"])
        assert "recall_memory" in str(turn.body["tools"])
    finally:
        await session.close()
        await store.close()


@pytest.mark.parametrize(
    "answers",
    [
        # talks about recalling instead of answering
        ["To answer this question, I would recall the information from earlier conversations."],
        # a call as text in doubled braces, then the same call again: a loop
        ['{{"name": "recall_memory", "arguments": {"query": "cat"}}}'] * 2,
    ],
)
async def test_a_model_that_calls_tools_but_cannot_answer_from_memory_gets_none(
    fake_openai: FakeOpenAI, answers: list[str]
) -> None:
    store, session = await open_local(fake_openai)
    try:
        call = Reply(text="", tool_calls=[{"name": PROBE_TOOL, "arguments": {"city": "Oslo"}}])
        fake_openai.script(call, *[Reply(text=a) for a in answers], Reply(text="Hello!"))
        await run_turn(session, "hi")
        turn = fake_openai.chat_requests[-1]
        assert len(fake_openai.chat_requests) == 2 + len(answers)
        assert "tools" not in turn.body
    finally:
        await session.close()
        await store.close()


async def test_a_server_the_user_runs_is_not_probed(fake_openai: FakeOpenAI) -> None:
    config = make_config(fake_openai.base_url)
    assert config.db_path is not None
    store = await Store.open(config.db_path)
    session = await ChatSession.open(config, store)
    try:
        await run_turn(session, "hi")
        (turn,) = fake_openai.chat_requests
        assert "recall_memory" in str(turn.body["tools"])
    finally:
        await session.close()
        await store.close()
