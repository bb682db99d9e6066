"""The MCP servers of one newt process: started lazily, stopped with the app.

Each server lives in its own asyncio task that holds the SDK's `Client` open
(the SDK's context managers must be entered and left by the same task); calls
from the turn loop go through that client. The SDK does the protocol, both
transports and the shutdown (close stdin, wait, kill the process group); newt
adds on top:

- lazy start: nothing runs until `ensure_started()` (the first turn with tools);
- failure isolation: a server that cannot start or dies is marked failed,
  reported once (`take_notices`), and its tools disappear; others go on;
- no orphans: stdio servers go through `launch.py` so the kernel stops them
  when newt itself is killed; `aclose()` stops them on a normal or Ctrl-C exit;
- names the model can use (`server__tool`, ^[a-zA-Z0-9_-]{1,64}$) and results
  it can afford (text capped to a budget, images and blobs as placeholders).

No textual here.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from newt.mcp.config import McpConfig, McpServerConfig
from newt.mcp.types import McpNotice, McpResult, McpTool, ServerInfo

log = logging.getLogger(__name__)
# The SDK logs transport trouble at WARNING; with no handler anywhere Python
# would print it on stderr, i.e. across the TUI. newt reports failures itself.
for _name in ("mcp", "httpx2"):
    logging.getLogger(_name).addHandler(logging.NullHandler())

START_TIMEOUT_S = 30.0
"""Longest wait for a server to start and list its tools."""
STOP_TIMEOUT_S = 8.0
"""Longest wait for one server to stop (the SDK's own escalation takes up to ~6 s)."""
MAX_DESCRIPTION_CHARS = 1024
"""Tool descriptions are sent with every request; a long one is cut to this."""
STDERR_TAIL_CHARS = 400
CONNECTION_CLOSED = -32000  # JSON-RPC code the SDK uses when the transport is gone

_LAUNCHER = Path(__file__).with_name("launch.py")
_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
MAX_TOOL_NAME = 64


# ------------------------------------------------------------------ values


# ---------------------------------------------------------- name and results


def qualified_name(server: str, tool: str, taken: set[str]) -> str:
    """server__tool as a valid, unique function name (^[a-zA-Z0-9_-]{1,64}$)."""
    base = f"{server}__{_BAD_NAME_CHARS.sub('_', tool) or 'tool'}"
    name = base
    if len(name) > MAX_TOOL_NAME or name in taken:
        digest = hashlib.sha1(tool.encode()).hexdigest()[:6]
        name = f"{base[: MAX_TOOL_NAME - 7]}_{digest}"
        counter = 2
        while name in taken:  # only if two long names share a digest prefix
            name = f"{base[: MAX_TOOL_NAME - 10]}_{digest}{counter:02d}"
            counter += 1
    return name


def _parameters(schema: Any) -> dict[str, Any]:
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    params = dict(schema)
    params.setdefault("type", "object")
    if params.get("type") == "object":
        params.setdefault("properties", {})
    params.pop("title", None)  # the function name already says it; saves tokens
    return params


def _description(text: str | None) -> str:
    text = (text or "").strip()
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return text


def _placeholder(block: Any) -> str:
    kind = getattr(block, "type", type(block).__name__)
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        data = getattr(block, "data", "") or ""
        size = len(data) * 3 // 4  # base64
        mime = getattr(block, "mime_type", "") or kind
        return f"[{kind} omitted: {mime}, about {size} bytes]"
    if kind == "resource":
        resource = getattr(block, "resource", None)
        uri = str(getattr(resource, "uri", ""))
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return f"[resource {uri}]\n{text}"
        mime = getattr(resource, "mime_type", None) or "binary"
        return f"[resource omitted: {uri}, {mime}]"
    if kind == "resource_link":
        return f"[resource link: {getattr(block, 'uri', '')} {getattr(block, 'name', '')}]".strip()
    return f"[{kind} content omitted]"


def result_text(result: Any) -> str:
    """All content of a CallToolResult as text; non-text blocks become placeholders."""
    parts = [_placeholder(block) for block in getattr(result, "content", None) or []]
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(p for p in parts if p) or "(the tool returned nothing)"


def cap_text(text: str, max_chars: int) -> tuple[str, bool]:
    """Cut `text` to `max_chars`, preferring a line end, and say that it was cut."""
    if len(text) <= max_chars:
        return text, False
    note = (
        "\n[newt cut this result: {shown} of {total} characters fit in the context window; "
        "ask the tool for less, e.g. a smaller range]"
    )
    keep = max(0, max_chars - len(note) - 8)  # the note itself fits the budget too
    cut = text[:keep]
    newline = cut.rfind("\n")
    if newline > keep * 0.8:
        cut = cut[:newline]
    return cut + note.format(shown=len(cut), total=len(text)), True


def _describe(exc: BaseException) -> str:
    """One line for a failure, from the innermost real cause of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return str(exc) or "protocol error"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _connection_lost(exc: BaseException) -> bool:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.error.code == CONNECTION_CLOSED
    return isinstance(exc, OSError | httpx2.TransportError | anyio.BrokenResourceError)


# ------------------------------------------------------------------ transports


class _NotFound(Exception):
    """The configured command is not on PATH: say so plainly, not as a spawn error."""


class _WatchedRead:
    """The transport's read stream, telling us when it ends (the server is gone)."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    def __getattr__(self, name: str) -> Any:  # last_context and friends
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedRead:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _WatchedRead:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _stdio_params(cfg: McpServerConfig) -> StdioServerParameters:
    # env: the SDK passes only a safe base (PATH, HOME, USER, ...) plus these,
    # so newt's own secrets (the API key) never reach a server
    if sys.platform.startswith("linux"):
        args = ["-I", "-S", str(_LAUNCHER), str(os.getpid()), cfg.command, *cfg.args]
        return StdioServerParameters(command=sys.executable, args=args, env=cfg.env)
    return StdioServerParameters(command=cfg.command, args=cfg.args, env=cfg.env)


@asynccontextmanager
async def _transport(
    cfg: McpServerConfig, stderr: TextIO, on_end: Callable[[], None]
) -> AsyncIterator[Any]:
    if cfg.command:
        async with stdio_client(_stdio_params(cfg), errlog=stderr) as (read, write):
            yield _WatchedRead(read, on_end), write
        return
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with (
        httpx2.AsyncClient(headers=cfg.headers, timeout=timeout) as http,
        streamable_http_client(cfg.url, http_client=http) as (read, write),
    ):
        yield _WatchedRead(read, on_end), write


# ------------------------------------------------------------------ servers


@dataclass
class _Server:
    config: McpServerConfig
    state: str = "idle"
    error: str = ""
    tools: list[McpTool] = field(default_factory=list)
    client: Client | None = None
    task: asyncio.Task[None] | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    lost: bool = False
    stopping: bool = False
    stderr: TextIO | None = None

    def stderr_tail(self) -> str:
        if self.stderr is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self.stderr.flush()
            self.stderr.seek(0, os.SEEK_END)
            size = self.stderr.tell()
            self.stderr.seek(max(0, size - STDERR_TAIL_CHARS * 4))
            lines = [ln.strip() for ln in self.stderr.read().splitlines() if ln.strip()]
            return lines[-1][-STDERR_TAIL_CHARS:] if lines else ""
        return ""


class McpManager:
    """All configured MCP servers of this process (see the module docstring)."""

    def __init__(
        self,
        config: McpConfig,
        *,
        start_timeout: float = START_TIMEOUT_S,
        on_notice: Callable[[McpNotice], None] | None = None,
    ) -> None:
        self._servers = {name: _Server(cfg) for name, cfg in config.servers.items()}
        for server in self._servers.values():
            if not server.config.enabled:
                server.state = "disabled"
            elif server.config.approve == "never":
                server.state = "blocked"  # never run: not even started
        self._start_timeout = start_timeout
        self._on_notice = on_notice
        self._notices: list[McpNotice] = []
        self._started = False
        self._closed = False
        self._start_lock = asyncio.Lock()
        # conversation-scoped choices, cleared by reset_conversation()
        self._off: set[str] = set()
        self._allowed: set[str] = set()

    # ------------------------------------------------------------ lifecycle

    @property
    def configured(self) -> bool:
        """True when any server could offer tools."""
        return any(s.state not in ("disabled", "blocked") for s in self._servers.values())

    async def ensure_started(self) -> None:
        """Start every enabled server (once) and wait until each is ready or failed."""
        if self._started or self._closed:
            return
        async with self._start_lock:
            if self._started:
                return
            for server in self._servers.values():
                if server.state == "idle":
                    server.state = "starting"
                    server.task = asyncio.create_task(
                        self._run(server), name=f"mcp:{server.config.name}"
                    )
            # also servers left starting by a turn cancelled while it waited here
            starting = [s for s in self._servers.values() if s.state == "starting"]
            await asyncio.gather(*(self._await_ready(s) for s in starting))
            self._started = True

    async def _await_ready(self, server: _Server) -> None:
        try:
            await asyncio.wait_for(server.ready.wait(), self._start_timeout)
        except TimeoutError:
            self._fail(server, f"did not start within {self._start_timeout:.0f} s")
            if server.task is not None:  # a hung handshake: the SDK still stops the process
                server.task.cancel()

    async def _run(self, server: _Server) -> None:
        cfg = server.config
        # the server's stderr: kept off the TUI, its last line explains a failure;
        # open for the server's whole life, closed by aclose()
        server.stderr = tempfile.TemporaryFile(  # noqa: SIM115
            "w+", encoding="utf-8", errors="replace"
        )
        try:
            if cfg.command and shutil.which(cfg.command, path=self._path(cfg)) is None:
                raise _NotFound(f"command {cfg.command!r} was not found on PATH")

            def on_end() -> None:
                server.lost = True
                server.wake.set()

            transport = _transport(cfg, server.stderr, on_end)
            async with Client(transport, cache=None) as client:
                server.tools = await self._list_tools(client, cfg.name)
                server.client = client
                if server.state == "starting":  # not timed out meanwhile
                    server.state = "ready"
                server.ready.set()
                await server.wake.wait()
                server.client = None
                if server.lost and not server.stopping:
                    self._fail(server, "the server stopped", lost=True)
        except _NotFound as exc:
            self._fail(server, str(exc))
        except Exception as exc:
            log.debug("MCP server %s failed", cfg.name, exc_info=True)
            reason = _describe(exc)
            if _connection_lost(exc):
                reason = "the server exited" if cfg.command else f"no connection ({reason})"
            self._fail(server, reason, lost=server.state == "ready")
        finally:
            server.client = None
            server.ready.set()
            if server.state in ("ready", "starting"):
                server.state = "stopped"

    @staticmethod
    def _path(cfg: McpServerConfig) -> str | None:
        return cfg.env.get("PATH") or os.environ.get("PATH")

    @staticmethod
    async def _list_tools(client: Client, server: str) -> list[McpTool]:
        tools: list[McpTool] = []
        taken: set[str] = set()
        cursor: str | None = None
        for _ in range(50):  # a paginator that never ends must not hang the start
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                name = qualified_name(server, tool.name, taken)
                taken.add(name)
                tools.append(
                    McpTool(
                        server,
                        tool.name,
                        name,
                        _description(tool.description),
                        _parameters(tool.input_schema),
                    )
                )
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    def _fail(self, server: _Server, reason: str, *, lost: bool = False) -> None:
        if server.state == "failed" or server.stopping:
            return
        tail = server.stderr_tail()
        if tail and tail not in reason:
            reason = f"{reason} ({tail})"
        server.state = "failed"
        server.error = reason
        server.tools = []
        verb = "stopped working" if lost else "could not start"
        notice = McpNotice(
            server.config.name,
            f"MCP server {server.config.name!r} {verb}: {reason}; its tools are unavailable",
        )
        self._notices.append(notice)
        if self._on_notice is not None:
            self._on_notice(notice)

    async def aclose(self) -> None:
        """Stop every server and wait for it (bounded); safe to call twice."""
        self._closed = True
        tasks = []
        for server in self._servers.values():
            server.stopping = True
            server.wake.set()
            if server.task is not None:
                tasks.append(server.task)
        if tasks:
            _done, pending = await asyncio.wait(tasks, timeout=STOP_TIMEOUT_S)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=STOP_TIMEOUT_S)
        for server in self._servers.values():
            if server.stderr is not None:
                server.stderr.close()
                server.stderr = None

    # ------------------------------------------------------------ state

    def take_notices(self) -> list[McpNotice]:
        """Failures not yet shown to the user (each is returned once)."""
        notices, self._notices = self._notices, []
        return notices

    def servers(self) -> list[ServerInfo]:
        return [
            ServerInfo(
                s.config.name,
                s.config.transport,
                s.state,
                s.config.approve,
                s.error,
                list(s.tools),
                s.config.name not in self._off,
            )
            for s in self._servers.values()
        ]

    def tools(self) -> list[McpTool]:
        """Tools to offer now: ready servers, minus what /tools switched off."""
        return [
            tool
            for s in self._servers.values()
            if s.state == "ready" and s.config.name not in self._off
            for tool in s.tools
            if tool.qualified not in self._off
        ]

    def find(self, qualified: str) -> McpTool | None:
        return next((t for t in self.tools() if t.qualified == qualified), None)

    def owns(self, name: str) -> bool:
        """True for any name of the server__tool shape of a configured server."""
        server, sep, _ = name.partition("__")
        return bool(sep) and server in self._servers

    def approval(self, qualified: str) -> str:
        """ "always", "ask" or "never" for this call, counting allow-for-this-conversation."""
        tool = self.find(qualified)
        if tool is None:
            return "never"
        mode = self._servers[tool.server].config.approve
        if mode == "ask" and qualified in self._allowed:
            return "always"
        return mode

    def allow_for_conversation(self, qualified: str) -> None:
        self._allowed.add(qualified)

    def set_enabled(self, name: str, enabled: bool) -> bool:
        """Switch a server or one tool on/off for this conversation; False if unknown."""
        known = name in self._servers or any(
            t.qualified == name for s in self._servers.values() for t in s.tools
        )
        if not known:
            return False
        if enabled:
            self._off.discard(name)
        else:
            self._off.add(name)
        return True

    def reset_conversation(self) -> None:
        """A new or different conversation: forget its approvals and switches."""
        self._off.clear()
        self._allowed.clear()

    # ------------------------------------------------------------ calls

    async def call(self, qualified: str, arguments: dict[str, Any], *, max_chars: int) -> McpResult:
        """Run one tool; the text is capped to `max_chars`. Cancelling cancels the call.

        A lost connection fails the server (reported once) and returns an error
        result, so the model hears why and the turn goes on.
        """
        tool = self.find(qualified)
        if tool is None:
            return McpResult(f"error: the tool {qualified!r} is not available", error=True)
        server = self._servers[tool.server]
        client = server.client
        if client is None:
            return McpResult(f"error: MCP server {tool.server!r} is not running", error=True)
        try:
            result = await client.call_tool(tool.name, arguments)
        except MCPError as exc:
            if _connection_lost(exc) or server.lost:
                self._fail(server, "the connection was lost during a call", lost=True)
                server.wake.set()
            return McpResult(f"error: {_describe(exc)}", error=True)
        except Exception as exc:
            if _connection_lost(exc):
                self._fail(server, _describe(exc), lost=True)
                server.wake.set()
            return McpResult(f"error: {_describe(exc)}", error=True)
        text, cut = cap_text(result_text(result), max_chars)
        return McpResult(text, error=bool(getattr(result, "is_error", False)), truncated=cut)
