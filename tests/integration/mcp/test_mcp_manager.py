"""McpManager against real MCP servers (the SDK's own server, over stdio and HTTP)."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncIterator

import pytest

from newt.mcp.config import McpConfig, parse_mcp_section
from newt.mcp.manager import McpManager, McpNotice
from newt.mcp.naming import qualified_name
from tests.support.mcp_servers import http_demo_server, stdio_server_table

FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _config(**servers: dict[str, object]) -> McpConfig:
    return parse_mcp_section({"servers": servers})


@pytest.fixture
async def stdio_manager() -> AsyncIterator[McpManager]:
    manager = McpManager(_config(demo=stdio_server_table()))
    try:
        yield manager
    finally:
        await manager.aclose()


async def test_nothing_starts_until_tools_are_needed(stdio_manager: McpManager) -> None:
    assert [s.state for s in stdio_manager.servers()] == ["idle"]
    assert stdio_manager.tools() == []
    await stdio_manager.ensure_started()
    assert [s.state for s in stdio_manager.servers()] == ["ready"]


async def test_stdio_tools_are_listed_namespaced_and_called(stdio_manager: McpManager) -> None:
    await stdio_manager.ensure_started()
    tools = {t.qualified: t for t in stdio_manager.tools()}
    assert {"demo__echo", "demo__add", "demo__slow", "demo__picture"} <= set(tools)
    add = tools["demo__add"].schema()
    assert add["type"] == "function"
    assert add["function"]["name"] == "demo__add"
    assert add["function"]["description"] == "Add two whole numbers."
    params = add["function"]["parameters"]
    assert params["type"] == "object" and params["required"] == ["a", "b"]
    assert set(params["properties"]) == {"a", "b"}

    result = await stdio_manager.call("demo__add", {"a": 2, "b": 40})
    assert (result.text, result.error) == ("42", False)


async def test_images_become_placeholders(stdio_manager: McpManager) -> None:
    await stdio_manager.ensure_started()
    result = await stdio_manager.call("demo__picture", {})
    assert result.text.startswith("[image omitted: image/png")
    assert "iVBOR" not in result.text  # no base64 for the model to choke on


async def test_tool_errors_are_results_and_the_server_stays(stdio_manager: McpManager) -> None:
    await stdio_manager.ensure_started()
    bad = await stdio_manager.call("demo__add", {"a": "not a number"})
    assert bad.error
    unknown = await stdio_manager.call("demo__nope", {})
    assert unknown.error and "not available" in unknown.text
    assert (await stdio_manager.call("demo__echo", {"text": "ok"})).text == "ok"
    assert stdio_manager.take_notices() == []


async def test_a_big_result_comes_back_whole(stdio_manager: McpManager) -> None:
    # the turn cuts what the model gets, once, with one note (test_mcp_agent.py)
    await stdio_manager.ensure_started()
    result = await stdio_manager.call("demo__big", {"chars": 50_000})
    assert len(result.text) == 50_000 and "cut" not in result.text


async def test_http_server_with_headers() -> None:
    with http_demo_server() as (url, _proc):
        manager = McpManager(_config(web={"url": url, "headers": {"X-Demo": "from-newt"}}))
        try:
            await manager.ensure_started()
            assert "web__whoami" in {t.qualified for t in manager.tools()}
            result = await manager.call("web__whoami", {})
            assert "x-demo=from-newt" in result.text
        finally:
            await manager.aclose()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_slow_call_is_cancelled_and_the_server_keeps_working(transport: str) -> None:
    with http_demo_server() as (url, _proc):
        table = stdio_server_table() if transport == "stdio" else {"url": url}
        manager = McpManager(_config(demo=table))
        try:
            await manager.ensure_started()
            call = asyncio.create_task(manager.call("demo__slow", {"seconds": 60}))
            await asyncio.sleep(0.5)
            assert not call.done()
            call.cancel()
            # the cancel reaches the awaiting caller at once, not after 60 s
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(call, 10)
            after = await manager.call("demo__echo", {"text": "still here"})
            assert after.text == "still here"
            assert [s.state for s in manager.servers()] == ["ready"]
        finally:
            await manager.aclose()


async def test_a_dying_stdio_server_is_reported_once_and_its_tools_go() -> None:
    seen: list[McpNotice] = []
    manager = McpManager(_config(demo=stdio_server_table()), on_notice=seen.append)
    try:
        await manager.ensure_started()
        result = await manager.call("demo__crash", {})
        assert result.error
        await asyncio.sleep(0.2)  # the transport's end arrives too; still one report
        notices = manager.take_notices()
        assert len(notices) == 1 and "'demo' stopped working" in notices[0].message
        assert seen == notices
        assert manager.take_notices() == []
        assert manager.tools() == []
        assert [(s.state, s.tools) for s in manager.servers()] == [("failed", [])]
        later = await manager.call("demo__echo", {"text": "x"})
        assert later.error and "not available" in later.text
    finally:
        await manager.aclose()


async def test_a_dying_http_server_is_reported_once() -> None:
    with http_demo_server() as (url, proc):
        manager = McpManager(_config(web={"url": url}))
        try:
            await manager.ensure_started()
            proc.kill()
            proc.wait()
            result = await manager.call("web__echo", {"text": "x"})
            assert result.error
            notices = manager.take_notices()
            assert len(notices) == 1 and "'web' stopped working" in notices[0].message
            assert manager.tools() == []
        finally:
            await manager.aclose()


async def test_servers_that_cannot_start_are_reported_and_the_others_work() -> None:
    crash = [
        "-c",
        "import sys; sys.stderr.write('boom: API token missing\\n'); sys.exit(1)",
    ]
    manager = McpManager(
        _config(
            missing={"command": "no-such-mcp-server-xyz"},
            broken={"command": sys.executable, "args": crash},
            refused={"url": "http://127.0.0.1:9/mcp"},
            demo=stdio_server_table(),
        )
    )
    try:
        await manager.ensure_started()
        states = {s.name: (s.state, s.error) for s in manager.servers()}
        assert states["demo"] == ("ready", "")
        assert states["missing"][0] == "failed" and "not found on PATH" in states["missing"][1]
        assert states["broken"][0] == "failed" and "boom: API token missing" in states["broken"][1]
        assert states["refused"][0] == "failed"
        notices = manager.take_notices()
        assert sorted(n.server for n in notices) == ["broken", "missing", "refused"]
        assert all("could not start" in n.message for n in notices)
        assert {t.server for t in manager.tools()} == {"demo"}
        await manager.ensure_started()  # no second attempt, no second report
        assert manager.take_notices() == []
    finally:
        await manager.aclose()


async def test_a_hung_server_times_out() -> None:
    hang = ["-c", "import time; time.sleep(60)"]
    manager = McpManager(_config(hung={"command": sys.executable, "args": hang}), start_timeout=1.0)
    try:
        await manager.ensure_started()
        [info] = manager.servers()
        assert info.state == "failed" and "did not start within 1 s" in info.error
    finally:
        await manager.aclose()


async def test_disabled_and_never_servers_do_not_start() -> None:
    manager = McpManager(
        _config(
            off=stdio_server_table(enabled=False),
            blocked=stdio_server_table(approve="never"),
        )
    )
    try:
        assert not manager.configured
        await manager.ensure_started()
        assert {s.name: s.state for s in manager.servers()} == {
            "off": "disabled",
            "blocked": "blocked",
        }
        assert manager.tools() == []
    finally:
        await manager.aclose()


async def test_approval_and_switches_are_per_conversation() -> None:
    manager = McpManager(
        _config(ask=stdio_server_table(), auto=stdio_server_table(approve="always"))
    )
    try:
        await manager.ensure_started()
        everything = manager.tools()
        assert manager.approval("ask__echo") == "ask"
        assert manager.approval("auto__echo") == "always"
        manager.allow_for_conversation("ask__echo")
        assert manager.approval("ask__echo") == "always"
        assert manager.approval("ask__add") == "ask"  # per tool, not per server

        assert manager.set_enabled("auto", False)
        assert all(t.server == "ask" for t in manager.tools())
        assert manager.set_enabled("ask__add", False)
        assert "ask__add" not in {t.qualified for t in manager.tools()}
        assert not manager.set_enabled("nosuch", False)

        manager.reset_conversation()
        assert manager.approval("ask__echo") == "ask"
        assert manager.tools() == everything
    finally:
        await manager.aclose()


def test_qualified_names_follow_the_function_name_rule() -> None:
    taken: set[str] = set()
    names = [
        qualified_name("fs", "read_file", taken),
        qualified_name("fs", "read.file/v2", taken),
        qualified_name("fs", "x" * 100, taken),
        qualified_name("fs", "x" * 100 + "y", taken),
        qualified_name("fs", "", taken),
    ]
    for name in names:
        taken.add(name)
        assert FUNCTION_NAME.match(name), name
    assert names[0] == "fs__read_file"
    assert names[1] == "fs__read_file_v2"
    assert names[2] != names[3]
    assert qualified_name("fs", "read_file", {"fs__read_file"}) != "fs__read_file"
