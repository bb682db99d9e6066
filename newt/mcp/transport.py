"""How newt reaches one MCP server (stdio through launch.py, or streamable HTTP),
and what a transport failure is called.

The SDK does the protocol and the shutdown; this module picks the transport,
keeps newt's secrets out of a server's environment, notices when the server's
stream ends, and turns the SDK's exception groups into one line for the user.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx2
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from newt.mcp.config import McpServerConfig

CONNECTION_CLOSED = -32000  # JSON-RPC code the SDK uses when the transport is gone
_LAUNCHER = Path(__file__).with_name("launch.py")


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


def search_path(cfg: McpServerConfig) -> str | None:
    """The PATH the server's command is looked up on (its own env's, else newt's)."""
    return cfg.env.get("PATH") or os.environ.get("PATH")


@asynccontextmanager
async def open_transport(
    cfg: McpServerConfig, stderr: TextIO, on_end: Callable[[], None]
) -> AsyncIterator[Any]:
    """(read, write) streams to the server; `on_end` runs when its stream ends."""
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


def describe_failure(exc: BaseException) -> str:
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


def connection_lost(exc: BaseException) -> bool:
    """True when the failure means the server or the line to it is gone."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.error.code == CONNECTION_CLOSED
    return isinstance(exc, OSError | httpx2.TransportError | anyio.BrokenResourceError)
