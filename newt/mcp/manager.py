"""The MCP servers of one newt process: started lazily, stopped with the app.

Each server lives in its own asyncio task that holds the SDK's `Client` open
(`server.py`); calls from the turn loop go through that client. The SDK does
the protocol, both transports and the shutdown (close stdin, wait, kill the
process group); newt adds on top:

- lazy start: nothing runs until `ensure_started()` (the first turn with tools);
- failure isolation: a server that cannot start or dies is marked failed,
  reported once (`take_notices`), and its tools disappear; others go on;
- no orphans: stdio servers go through `launch.py` so the kernel stops them
  when newt itself is killed (`transport.py`); `aclose()` stops them on a
  normal or Ctrl-C exit;
- names the model can use (`naming.py`: ``server__tool``), schemas worth their
  tokens (`schema.py`) and results it can read (`results.py`: images and
  blobs as placeholders; the turn cuts the text to the window, once);
- per-conversation approvals and switches (`approval.py`).

No textual here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from mcp.shared.exceptions import MCPError

from newt.mcp.approval import ConversationChoices
from newt.mcp.config import McpConfig
from newt.mcp.results import result_text
from newt.mcp.server import McpServer
from newt.mcp.transport import connection_lost, describe_failure
from newt.mcp.types import McpNotice, McpResult, McpTool, ServerInfo

# The SDK logs transport trouble at WARNING; with no handler anywhere Python
# would print it on stderr, i.e. across the TUI. newt reports failures itself.
for _name in ("mcp", "httpx2"):
    logging.getLogger(_name).addHandler(logging.NullHandler())

START_TIMEOUT_S = 30.0
"""Longest wait for a server to start and list its tools."""
STOP_TIMEOUT_S = 8.0
"""Longest wait for one server to stop (the SDK's own escalation takes up to ~6 s)."""


class McpManager:
    """All configured MCP servers of this process (see the module docstring)."""

    def __init__(
        self,
        config: McpConfig,
        *,
        start_timeout: float = START_TIMEOUT_S,
        on_notice: Callable[[McpNotice], None] | None = None,
    ) -> None:
        self._servers = {
            name: McpServer(cfg, report=self._report) for name, cfg in config.servers.items()
        }
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
        self._choices = ConversationChoices()  # cleared by reset_conversation()

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
                    server.start()
            # also servers left starting by a turn cancelled while it waited here
            starting = [s for s in self._servers.values() if s.state == "starting"]
            await asyncio.gather(*(s.await_ready(self._start_timeout) for s in starting))
            self._started = True

    def _report(self, notice: McpNotice) -> None:
        self._notices.append(notice)
        if self._on_notice is not None:
            self._on_notice(notice)

    async def aclose(self) -> None:
        """Stop every server and wait for it (bounded); safe to call twice."""
        self._closed = True
        tasks = [task for s in self._servers.values() if (task := s.stop()) is not None]
        if tasks:
            _done, pending = await asyncio.wait(tasks, timeout=STOP_TIMEOUT_S)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=STOP_TIMEOUT_S)
        for server in self._servers.values():
            server.close_stderr()

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
                self._choices.is_on(s.config.name),
            )
            for s in self._servers.values()
        ]

    def tools(self) -> list[McpTool]:
        """Tools to offer now: ready servers, minus what /tools switched off."""
        return [
            tool
            for s in self._servers.values()
            if s.state == "ready"
            for tool in s.tools
            if self._choices.offers(tool)
        ]

    def find(self, qualified: str) -> McpTool | None:
        return next((t for t in self.tools() if t.qualified == qualified), None)

    def owns(self, name: str) -> bool:
        """True for any name of the server__tool shape of a configured server."""
        server, sep, _ = name.partition("__")
        return bool(sep) and server in self._servers

    # ------------------------------------------------------------ this conversation

    def approval(self, qualified: str) -> str:
        """ "always", "ask" or "never" for this call, counting allow-for-this-conversation."""
        tool = self.find(qualified)
        if tool is None:
            return "never"
        return self._choices.approval(tool, self._servers[tool.server].config.approve)

    def allow_for_conversation(self, qualified: str) -> None:
        self._choices.allow(qualified)

    def set_enabled(self, name: str, enabled: bool) -> bool:
        """Switch a server or one tool on/off for this conversation; False if unknown."""
        known = name in self._servers or any(
            t.qualified == name for s in self._servers.values() for t in s.tools
        )
        if known:
            self._choices.switch(name, enabled)
        return known

    def reset_conversation(self) -> None:
        """A new or different conversation: forget its approvals and switches."""
        self._choices.reset()

    # ------------------------------------------------------------ calls

    async def call(self, qualified: str, arguments: dict[str, Any]) -> McpResult:
        """Run one tool; the whole result as text (the turn cuts it to the window).
        Cancelling cancels the call.

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
            if connection_lost(exc) or server.lost:
                server.fail("the connection was lost during a call", lost=True)
                server.wake.set()
            return McpResult(f"error: {describe_failure(exc)}", error=True)
        except Exception as exc:
            if connection_lost(exc):
                server.fail(describe_failure(exc), lost=True)
                server.wake.set()
            return McpResult(f"error: {describe_failure(exc)}", error=True)
        return McpResult(result_text(result), error=bool(result.is_error))
