"""MCP tools in the real turn loop: real ChatSession, real SQLite, the fake
OpenAI server scripting the model's tool calls, and the demo MCP server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from newt.agent import events as ev
from newt.agent.session.chat_session import ChatSession
from newt.agent.tools.builtin import MAX_SHOWN_RESULT_CHARS
from newt.config import Config
from newt.recall import RecallRequest
from newt.store import Store
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.mcp_servers import http_demo_server, server_toml
from tests.support.received import tool_names
from tests.support.session_helpers import done_of, make_config, newt_cmd, reply_of, run_turn


@pytest.fixture
async def opened(
    fake_openai: FakeOpenAI, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[Store, ChatSession]]:
    config = make_config(fake_openai.base_url, getattr(request, "param", server_toml("demo")))
    config.backend.max_retries = 0
    assert config.db_path is not None
    store = await Store.open(config.db_path)
    session = await ChatSession.open(config, store)
    try:
        yield store, session
    finally:
        await session.close()
        await store.close()


def tool_message_of(body: dict[str, Any]) -> str:
    return str([m for m in body["messages"] if m["role"] == "tool"][-1]["content"])


def call(name: str, **arguments: Any) -> Reply:
    return Reply(text="", tool_calls=[{"name": name, "arguments": arguments}])


async def test_mcp_tools_are_offered_called_stored_and_recallable(
    fake_openai: FakeOpenAI, opened: tuple[Store, ChatSession]
) -> None:
    store, session = opened
    fake_openai.script(call("demo__echo", text="the otters of Lake Vindel"), Reply(text="Done."))
    events = await run_turn(session, "echo something")
    first = fake_openai.chat_requests[0].body
    names = tool_names(first)
    assert names[:3] == ["save_note", "recall_memory", "fetch_record"]
    assert "demo__echo" in names and "demo__slow" in names
    finished = [e for e in events if isinstance(e, ev.ToolCallFinished)]
    assert [(e.name, e.result, e.error) for e in finished] == [
        ("demo__echo", "the otters of Lake Vindel", False)
    ]
    second = fake_openai.chat_requests[1].body["messages"]
    assert second[-1] == {
        "role": "tool",
        "tool_call_id": second[-2]["tool_calls"][0]["id"],
        "content": "the otters of Lake Vindel",
    }
    done = done_of(events)
    assert done.status == "complete" and reply_of(events) == "Done."
    # stored with the turn ...
    [turn] = [t for t in await session.edits.history() if t.kind == "turn"]
    assert turn.tool_events[0]["name"] == "demo__echo"
    assert turn.tool_events[0]["result"] == "the otters of Lake Vindel"
    # ... and indexed for recall like a turn
    record = await store.records.get(f"t{done.turn_id}.1")
    assert record is not None and "otters of Lake Vindel" in record.content
    found = await session.recall.recall(RecallRequest("Vindel otters", retained_token_budget=512))
    assert found.retained_evidence is not None
    assert f"t{done.turn_id}.1" in {c.retrieval_key for c in found.retained_evidence.capsules}


async def test_schemas_count_in_memory_status(
    fake_openai: FakeOpenAI, opened: tuple[Store, ChatSession]
) -> None:
    _store, session = opened
    before = session.memory_status()
    assert before.mcp_tools == 0  # nothing started yet: nothing offered
    fake_openai.script(Reply(text="hi"))
    await run_turn(session, "hello")
    after = session.memory_status()
    assert after.mcp_tools == len(tool_names(fake_openai.chat_requests[0].body)) - 3
    assert after.tools_offered == after.mcp_tools + 3
    sent = json.dumps(fake_openai.chat_requests[0].body["tools"])
    assert after.tool_tokens == session.estimate_tokens(sent)
    assert after.tool_tokens > before.tool_tokens


GUARD_TOML = "[memory]\ncontext_tokens = 2048\n[recall]\nretained_token_budget = 0\n"


async def _guard_compacts(config: Config, fake: FakeOpenAI, *, mcp_on: bool) -> bool:
    """A short conversation resumed in a new session (which cannot know whether
    the restored report carried MCP schemas, so counts them), then a message
    that fits the window without the MCP schemas but not with them: does the
    pre-send guard compact first?"""
    async with await ChatSession.open(config) as first:
        for i in range(2):
            fake.script(Reply(text=f"answer {i} " + "lorem ipsum " * 15))
            await run_turn(first, f"question {i} " + "dolor sit " * 15)
        assert first.conversation is not None
        conv_id = first.conversation.id
    async with await ChatSession.open(config) as session:
        await session.conversations.resume(conv_id)
        await session.mcp.prepare()  # the turn's own prepare then finds them started
        mcp_tokens = session.estimate_tokens(json.dumps(session.mcp.schemas()))
        assert mcp_tokens > 300
        session.mcp_controls.set_tool_enabled("demo", mcp_on)
        # resumed: the restored report already holds the system prompt and the
        # built-in schemas; what the guard must add is the message, the reply
        # reserve and the MCP schemas that report never carried
        ceiling, reserve = session.capabilities.ceiling_and_reserve()
        target = ceiling - session.memory_status().used - reserve - mcp_tokens // 2
        words = target
        while session.estimate_tokens("amet " * words) > target:
            words -= 10
        assert words > 50
        fake.script(Reply(text="ok"))
        events = await run_turn(session, "amet " * words)
        # now the report holds what was sent: no double count on the next turn
        reported = session.mcp.reported_schema_tokens
        assert (reported > mcp_tokens // 2) if mcp_on else reported == 0
        return any(isinstance(e, ev.Compacted) and e.reason == "guard" for e in events)


async def test_the_pre_send_guard_counts_mcp_schemas(fake_openai: FakeOpenAI) -> None:
    config = make_config(fake_openai.base_url, GUARD_TOML + server_toml("demo"))
    assert not await _guard_compacts(config, fake_openai, mcp_on=False)
    assert await _guard_compacts(config, fake_openai, mcp_on=True)


@pytest.mark.parametrize(
    "opened", ["[memory]\ncontext_tokens = 2048\n" + server_toml("demo")], indirect=True
)
async def test_a_too_big_result_is_cut_to_fit_the_window(
    fake_openai: FakeOpenAI, opened: tuple[Store, ChatSession]
) -> None:
    _store, session = opened
    fake_openai.script(call("demo__big", chars=200_000), Reply(text="Too much."))
    events = await run_turn(session, "give me everything")
    [finished] = [e for e in events if isinstance(e, ev.ToolCallFinished)]
    assert len(finished.result) == 200_000  # the tool block has it all
    sent = tool_message_of(fake_openai.chat_requests[1].body)
    assert "[result cut to fit the context window" in sent and "of 200,000 characters" in sent
    assert sent.count("[result cut") == 1  # cut once, one note
    second = fake_openai.chat_requests[1].body
    request_chars = len(json.dumps(second["messages"])) + len(json.dumps(second["tools"]))
    ceiling, reserve = session.capabilities.ceiling_and_reserve()
    assert request_chars / 4 < ceiling - reserve  # the retried prompt still fits
    assert done_of(events).status == "complete"


@pytest.mark.parametrize(
    "opened", ["[memory]\ncontext_tokens = 2048\n" + server_toml("demo")], indirect=True
)
async def test_the_tool_block_shows_at_most_its_bound_with_the_same_note(
    fake_openai: FakeOpenAI, opened: tuple[Store, ChatSession]
) -> None:
    _store, session = opened
    fake_openai.script(call("demo__big", chars=450_000), Reply(text="Too much."))
    events = await run_turn(session, "give me everything")
    [finished] = [e for e in events if isinstance(e, ev.ToolCallFinished)]
    assert len(finished.result) <= MAX_SHOWN_RESULT_CHARS
    assert finished.result.count("[result cut") == 1 and "of 450,000 characters" in finished.result
    sent = tool_message_of(fake_openai.chat_requests[1].body)
    assert sent.count("[result cut") == 1 and "of 450,000 characters" in sent


async def test_a_dying_server_is_reported_once_and_the_chat_goes_on(
    fake_openai: FakeOpenAI, opened: tuple[Store, ChatSession]
) -> None:
    _store, session = opened
    fake_openai.script(call("demo__crash"), Reply(text="It broke."), Reply(text="Still here."))
    events = await run_turn(session, "crash it")
    notices = [e.message for e in events if isinstance(e, ev.Notice)]
    assert len([n for n in notices if "'demo' stopped working" in n]) == 1
    [finished] = [e for e in events if isinstance(e, ev.ToolCallFinished)]
    assert finished.error
    assert done_of(events).status == "complete"
    events = await run_turn(session, "and now?")
    assert reply_of(events) == "Still here."
    assert not [e for e in events if isinstance(e, ev.Notice)]  # reported once only
    assert tool_names(fake_openai.chat_requests[-1].body) == [
        "save_note",
        "recall_memory",
        "fetch_record",
    ]


@pytest.mark.parametrize(
    "opened",
    [server_toml("demo") + '[mcp.servers.gone]\ncommand = "no-such-mcp-xyz"\n'],
    indirect=True,
)
async def test_a_server_that_cannot_start_is_reported_and_others_work(
    fake_openai: FakeOpenAI, opened: tuple[Store, ChatSession]
) -> None:
    _store, session = opened
    fake_openai.script(call("demo__add", a=1, b=2), Reply(text="3"))
    events = await run_turn(session, "add")
    notices = [e.message for e in events if isinstance(e, ev.Notice)]
    assert notices == [
        "MCP server 'gone' could not start: command 'no-such-mcp-xyz' was not found on PATH; "
        "its tools are unavailable"
    ]
    [finished] = [e for e in events if isinstance(e, ev.ToolCallFinished)]
    assert finished.result == "3"


async def test_http_server_in_the_loop(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    with http_demo_server() as (url, _proc):
        text = f'[mcp.servers.web]\nurl = "{url}"\napprove = "always"\n'
        config = make_config(fake_openai.base_url, text)
        assert config.db_path is not None
        store = await Store.open(config.db_path)
        session = await ChatSession.open(config, store)
        try:
            fake_openai.script(call("web__add", a=20, b=22), Reply(text="42"))
            events = await run_turn(session, "add over http")
            [finished] = [e for e in events if isinstance(e, ev.ToolCallFinished)]
            assert finished.result == "42"
        finally:
            await session.close()
            await store.close()


async def test_a_backend_that_rejects_tools_starts_no_server(
    fake_openai: FakeOpenAI, opened: tuple[Store, ChatSession]
) -> None:
    _store, session = opened
    session.capabilities.supports_tools = False
    fake_openai.script(Reply(text="plain"))
    events = await run_turn(session, "hello")
    assert reply_of(events) == "plain"
    assert "tools" not in fake_openai.chat_requests[0].body
    assert [s.state for s in session.mcp.servers()] == ["idle"]


def test_print_mode_runs_only_always_tools_and_says_so(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    home = tmp_path / "print-home"
    home.mkdir()
    (home / "config.toml").write_text(server_toml("auto") + server_toml("asky", approve="ask"))
    fake_openai.script(
        Reply(
            text="",
            tool_calls=[
                {"name": "auto__add", "arguments": {"a": 1, "b": 1}},
                {"name": "asky__echo", "arguments": {"text": "should not run"}},
            ],
        ),
        Reply(text="two"),
    )
    result = newt_cmd(
        "-p",
        "add one and one",
        "--base-url",
        fake_openai.base_url,
        "--model",
        "fake-model",
        home=home,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "two"
    names = tool_names(fake_openai.chat_requests[0].body)
    assert "auto__add" in names and not [n for n in names if n.startswith("asky__")]
    assert "MCP tools of 'asky' are not offered" in result.stderr
    assert "skipped MCP tool asky__echo" in result.stderr
    tool_messages = [
        m for m in fake_openai.chat_requests[1].body["messages"] if m["role"] == "tool"
    ]
    assert tool_messages[0]["content"] == "2"
    assert "did not run echo" in tool_messages[1]["content"]
