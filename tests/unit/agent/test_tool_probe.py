"""A model newt runs itself is asked once whether it calls tools at all; one that does not
is not offered them. The fake server stands in for llama-server:
`server_context_tokens` set is what marks a server newt runs."""

from __future__ import annotations

from newt.agent.session.chat_session import ChatSession
from newt.agent.tools.probe import PROBE_TOOL
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


async def test_a_model_that_writes_the_call_as_text_gets_the_tools(
    fake_openai: FakeOpenAI,
) -> None:
    store, session = await open_local(fake_openai)
    try:
        call = '```json\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n```'
        fake_openai.script(Reply(text=call), Reply(text="Hello!"))
        await run_turn(session, "hi")
        probe, turn = fake_openai.chat_requests
        assert probes([probe]) and "recall_memory" in str(turn.body["tools"])
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
