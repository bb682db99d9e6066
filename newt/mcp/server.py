"""One MCP server's life: started in a task of its own, ready or failed, then stopped.

The SDK's context managers must be entered and left by the same task, so each
server's task holds its `Client` open until it is woken to stop (or its
stream ends). A failure is reported once through `report` and takes the
server's tools away; its stderr is kept off the TUI, its last line explains
the failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from mcp import Client

from newt.mcp.config import McpServerConfig
from newt.mcp.schema import offered_tool
from newt.mcp.transport import connection_lost, describe_failure, open_transport, search_path
from newt.mcp.types import McpNotice, McpTool

log = logging.getLogger(__name__)

STDERR_TAIL_CHARS = 400
MAX_TOOL_PAGES = 50
"""A paginator that never ends must not hang the start."""


@dataclass
class McpServer:
    config: McpServerConfig
    report: Callable[[McpNotice], None]
    """Called once when the server could not start or stopped working."""
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

    def start(self) -> None:
        self.state = "starting"
        self.task = asyncio.create_task(self._run(), name=f"mcp:{self.config.name}")

    async def await_ready(self, timeout: float) -> None:
        """Until the server lists its tools or fails; a hung start fails after `timeout`."""
        try:
            await asyncio.wait_for(self.ready.wait(), timeout)
        except TimeoutError:
            self.fail(f"did not start within {timeout:.0f} s")
            if self.task is not None:  # a hung handshake: the SDK still stops the process
                self.task.cancel()

    async def _run(self) -> None:
        cfg = self.config
        # the server's stderr: kept off the TUI, its last line explains a failure;
        # open for the server's whole life, closed by close_stderr()
        self.stderr = tempfile.TemporaryFile(  # noqa: SIM115
            "w+", encoding="utf-8", errors="replace"
        )
        try:
            if cfg.command and shutil.which(cfg.command, path=search_path(cfg)) is None:
                # said plainly, not as the spawn error the SDK would raise
                self.fail(f"command {cfg.command!r} was not found on PATH")
                return

            def on_end() -> None:
                self.lost = True
                self.wake.set()

            transport = open_transport(cfg, self.stderr, on_end)
            async with Client(transport, cache=None) as client:
                self.tools = await _list_tools(client, cfg.name)
                self.client = client
                if self.state == "starting":  # not timed out meanwhile
                    self.state = "ready"
                self.ready.set()
                await self.wake.wait()
                self.client = None
                if self.lost and not self.stopping:
                    self.fail("the server stopped", lost=True)
        except Exception as exc:
            log.debug("MCP server %s failed", cfg.name, exc_info=True)
            reason = describe_failure(exc)
            if connection_lost(exc):
                reason = "the server exited" if cfg.command else f"no connection ({reason})"
            self.fail(reason, lost=self.state == "ready")
        finally:
            self.client = None
            self.ready.set()
            if self.state in ("ready", "starting"):
                self.state = "stopped"

    def fail(self, reason: str, *, lost: bool = False) -> None:
        """Mark the server failed and report it, once; its tools disappear."""
        if self.state == "failed" or self.stopping:
            return
        tail = self.stderr_tail()
        if tail and tail not in reason:
            reason = f"{reason} ({tail})"
        self.state = "failed"
        self.error = reason
        self.tools = []
        verb = "stopped working" if lost else "could not start"
        self.report(
            McpNotice(
                self.config.name,
                f"MCP server {self.config.name!r} {verb}: {reason}; its tools are unavailable",
            )
        )

    def stop(self) -> asyncio.Task[None] | None:
        """Ask the server's task to leave its client (the SDK stops the process)."""
        self.stopping = True
        self.wake.set()
        return self.task

    def close_stderr(self) -> None:
        if self.stderr is not None:
            self.stderr.close()
            self.stderr = None

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


async def _list_tools(client: Client, server: str) -> list[McpTool]:
    tools: list[McpTool] = []
    taken: set[str] = set()
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        for listed in page.tools:
            tool = offered_tool(server, listed, taken)
            taken.add(tool.qualified)
            tools.append(tool)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools
