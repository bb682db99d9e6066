"""MCP tools in the real TUI (Pilot): approval allow/deny, Esc on a slow tool, /tools.

Real app, real ChatSession and SQLite, the fake OpenAI server scripting the
model's tool calls, the demo MCP server as a real subprocess.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from newt.agent.tools.approval import denied_result
from newt.config import Config, load_config
from newt.ui.app import NewtApp
from newt.ui.screens.chat import ChatScreen
from newt.ui.screens.mcp_approval import McpApprovalScreen
from newt.ui.widgets.messages import AssistantMessage, NoticeMessage, ToolCallBlock
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.mcp_servers import server_toml
from tests.support.pilot import chat_ready, type_and_send
from tests.support.received import tool_names


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("NEWT_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home


def config_for(server: FakeOpenAI, home: Path, toml: str) -> Config:
    (home / "config.toml").write_text(toml)
    config = load_config(base_url=server.base_url, model="fake-model")
    config.backend.max_retries = 0
    return config


async def until(pilot: Any, test: Callable[[], bool], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if test():
            return
        await pilot.pause(0.02)
    raise AssertionError("condition never became true")


async def idle(pilot: Any, screen: ChatScreen) -> None:
    await until(pilot, lambda: not screen.busy and not any(w.is_running for w in screen.workers))
    await pilot.pause()


async def approval(pilot: Any) -> McpApprovalScreen:
    app = pilot.app
    await until(pilot, lambda: isinstance(app.screen, McpApprovalScreen))
    await until(pilot, lambda: bool(app.screen.query("#approval-args-text")))
    await pilot.pause()
    return app.screen  # type: ignore[no-any-return]


def call(name: str, **arguments: Any) -> Reply:
    return Reply(text="", tool_calls=[{"name": name, "arguments": arguments}])


def tool_message(fake: FakeOpenAI, request: int = -1) -> str:
    messages = fake.chat_requests[request].body["messages"]
    return str([m for m in messages if m["role"] == "tool"][-1]["content"])


async def test_allow_once_then_for_the_conversation(home: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(
        call("demo__echo", text="first"),
        Reply(text="one"),
        call("demo__echo", text="second"),
        Reply(text="two"),
        call("demo__echo", text="third"),
        Reply(text="three"),
    )
    app = NewtApp(config_for(fake_openai, home, server_toml("demo", approve="ask")))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "echo first")
        await approval(pilot)
        shown = app.screen.query_one("#approval-call", Static).render()
        assert "demo" in str(shown) and "echo" in str(shown)
        await pilot.press("a")  # allow once
        await idle(pilot, screen)
        assert tool_message(fake_openai) == "first"

        await type_and_send(pilot, "echo second")  # asked again: "once" was once
        await approval(pilot)
        await pilot.press("c")  # allow for this conversation
        await idle(pilot, screen)
        assert tool_message(fake_openai) == "second"

        await type_and_send(pilot, "echo third")  # not asked any more
        await idle(pilot, screen)
        assert not isinstance(app.screen, McpApprovalScreen)
        assert tool_message(fake_openai) == "third"
        blocks = list(screen.query(ToolCallBlock))
        assert [b.call.result for b in blocks] == ["first", "second", "third"]

        await pilot.press("ctrl+n")  # a new conversation asks again
        await pilot.pause()
        fake_openai.script(call("demo__echo", text="fourth"), Reply(text="four"))
        await type_and_send(pilot, "echo fourth")
        await approval(pilot)
        await pilot.press("d")
        await idle(pilot, screen)


@pytest.mark.parametrize("key", ["d", "escape"])
async def test_deny_goes_back_to_the_model_as_the_result(
    home: Path, fake_openai: FakeOpenAI, key: str
) -> None:
    fake_openai.script(call("demo__echo", text="secret"), Reply(text="Understood."))
    app = NewtApp(config_for(fake_openai, home, server_toml("demo", approve="ask")))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "echo it")
        await approval(pilot)
        request = app.screen.request  # type: ignore[attr-defined]
        await pilot.press(key)
        await idle(pilot, screen)
        assert tool_message(fake_openai) == denied_result(request)
        [block] = screen.query(ToolCallBlock)
        assert block.call.error and block.call.result == denied_result(request)
        assert [m.entry.text for m in screen.query(AssistantMessage)] == ["Understood."]


async def test_the_approval_shows_arguments_escaped(home: Path, fake_openai: FakeOpenAI) -> None:
    hostile = "[@click=app.quit]x[/] [bold red]boom\x1b]52;c;aGk=\x07\x1b[2J"
    fake_openai.script(call("demo__echo", text=hostile), Reply(text="ok"))
    app = NewtApp(config_for(fake_openai, home, server_toml("demo", approve="ask")))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "echo")
        await approval(pilot)
        args = app.screen.query_one("#approval-args-text", Static)
        text = str(args.render())
        assert "[@click=app.quit]x[/] [bold red]boom" in text  # literal, not markup
        assert "\x1b" not in text and "\x07" not in text
        assert json.loads(args.content.plain if hasattr(args.content, "plain") else text)
        await pilot.press("d")
        await idle(pilot, screen)
        assert app.is_running  # the [@click=app.quit] never fired


async def test_escape_stops_a_slow_tool(home: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(call("demo__slow", seconds=60))
    app = NewtApp(config_for(fake_openai, home, server_toml("demo", approve="always")))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "take your time")
        await until(pilot, lambda: bool(list(screen.query(ToolCallBlock))))
        await pilot.pause(0.3)
        started = time.monotonic()
        await pilot.press("escape")
        await idle(pilot, screen)
        assert time.monotonic() - started < 30  # not the tool's 60 s
        [message] = screen.query(AssistantMessage)
        assert message.entry.status == "interrupted"
        assert len(fake_openai.chat_requests) == 1  # the slow result never went out
        session = app.session
        assert session is not None
        assert [s.state for s in session.mcp.servers()] == ["ready"]  # type: ignore[attr-defined]
        fake_openai.script(Reply(text="next"))
        await type_and_send(pilot, "still there?")
        await idle(pilot, screen)
        assert screen.query(AssistantMessage).last().entry.text == "next"


async def test_tools_command_lists_and_switches(home: Path, fake_openai: FakeOpenAI) -> None:
    toml = server_toml("demo") + '[mcp.servers.off]\ncommand = "x"\nenabled = false\n'
    app = NewtApp(config_for(fake_openai, home, toml))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "/tools")
        await pilot.pause(0.2)
        listing = str(screen.query(NoticeMessage).last().render())
        assert "demo (stdio, approve = always): not started" in listing
        assert "off (stdio, approve = ask): disabled in the config" in listing

        fake_openai.script(Reply(text="hi"))
        await type_and_send(pilot, "hello")
        await idle(pilot, screen)
        assert "demo__echo" in tool_names(fake_openai.chat_requests[-1].body)
        await type_and_send(pilot, "/tools")
        await pilot.pause(0.2)
        listing = str(screen.query(NoticeMessage).last().render())
        assert "demo (stdio, approve = always): running" in listing
        assert "  demo__echo — Return the text unchanged." in listing

        await type_and_send(pilot, "/tools off demo")
        await pilot.pause(0.2)
        fake_openai.script(Reply(text="hi again"))
        await type_and_send(pilot, "hello again")
        await idle(pilot, screen)
        assert not [n for n in tool_names(fake_openai.chat_requests[-1].body) if "__" in n]
        await type_and_send(pilot, "/tools on demo__echo")
        await pilot.pause(0.2)
        assert "demo__echo is on" in str(screen.query(NoticeMessage).last().render())


async def test_quitting_at_the_prompt_runs_nothing_and_stops_the_server(
    home: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(call("demo__echo", text="never"))
    app = NewtApp(config_for(fake_openai, home, server_toml("demo", approve="ask")))
    async with app.run_test(size=(120, 40)) as pilot:
        await chat_ready(pilot)
        await type_and_send(pilot, "echo")
        await approval(pilot)
        await pilot.press("ctrl+q")
        await pilot.pause()
    session = app.session
    assert session is not None
    assert [s.state for s in session.mcp.servers()] == ["stopped"]  # type: ignore[attr-defined]
    assert len(fake_openai.chat_requests) == 1  # no tool result ever went back
