"""`[mcp.servers.NAME]`: which MCP servers newt may start, and how far to trust them.

The shape follows what other MCP clients use:

    [mcp.servers.files]
    command = "mcp-server-filesystem"     # stdio: a command started by newt
    args = ["/home/me/notes"]
    env = { LOG_LEVEL = "warning" }

    [mcp.servers.search]
    url = "http://127.0.0.1:8931/mcp"     # streamable HTTP: a server already running
    headers = { Authorization = "Bearer ..." }
    approve = "always"                     # "ask" (default) | "always" | "never"

Errors name the server and the key; newt.config adds the file and line.
No SDK import here: parsing a config must stay cheap.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from newt.errors import InputError

APPROVE_MODES = ("ask", "always", "never")

# A server's name becomes the prefix of its tools' names, which must match
# the OpenAI function-name rule ^[a-zA-Z0-9_-]{1,64}$; "__" separates the two.
_NAME = re.compile(r"^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$")
MAX_SERVER_NAME = 24

_KEYS = ("command", "args", "env", "url", "headers", "enabled", "approve")


class McpConfigError(InputError, ValueError):
    """A mistake in the [mcp] section; the message names the server and the key."""


@dataclass
class McpServerConfig:
    name: str
    command: str = ""
    """Executable of a stdio server (looked up on PATH)."""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment for a stdio server, over a minimal safe base (PATH, HOME, ...)."""
    url: str = ""
    """Endpoint of a streamable HTTP server."""
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    """HTTP headers, e.g. Authorization; kept out of repr so they reach no log."""
    enabled: bool = True
    approve: str = "ask"
    """"ask": the user approves each call; "always": runs without asking
    (print mode runs only these); "never": the tools are not offered or run."""

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"


@dataclass
class McpConfig:
    servers: dict[str, McpServerConfig] = field(default_factory=dict)


Where = Callable[[str], str]
"""Turns a dotted key into "file, line N: dotted.key" for messages."""


def _plain(dotted: str) -> str:
    return dotted


def parse_mcp_section(body: Any, where: Where = _plain) -> McpConfig:
    """Validate the unwrapped `[mcp]` table; unknown keys are errors."""
    if not isinstance(body, dict):
        raise McpConfigError(f"{where('mcp')} must be a table")
    for key in body:
        if key != "servers":
            raise McpConfigError(f"{where(f'mcp.{key}')} is not a known key; [mcp] has: servers")
    servers = body.get("servers", {})
    if not isinstance(servers, dict):
        raise McpConfigError(f"{where('mcp.servers')} must be a table of [mcp.servers.NAME] tables")
    config = McpConfig()
    for name, table in servers.items():
        config.servers[name] = _parse_server(name, table, where)
    return config


def _parse_server(name: str, table: Any, where: Where) -> McpServerConfig:
    prefix = f"mcp.servers.{name}"
    if not _NAME.match(name) or len(name) > MAX_SERVER_NAME:
        raise McpConfigError(
            f"{where(prefix)}: server name {name!r} must be 1-{MAX_SERVER_NAME} letters, digits, "
            "'-' or single '_' (it prefixes the server's tool names)"
        )
    if not isinstance(table, dict):
        raise McpConfigError(f"{where(prefix)} must be a table")
    server = McpServerConfig(name=name)
    for key, value in table.items():
        dotted = f"{prefix}.{key}"
        if key not in _KEYS:
            raise McpConfigError(
                f"{where(dotted)} is not a known key (server {name!r}); known keys: "
                + ", ".join(_KEYS)
            )
        if key in ("command", "url", "approve"):
            if not isinstance(value, str):
                raise McpConfigError(f"{where(dotted)} (server {name!r}) must be a string")
            setattr(server, key, value.strip())
        elif key == "args":
            if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
                raise McpConfigError(
                    f"{where(dotted)} (server {name!r}) must be a list of strings, "
                    'e.g. args = ["--root", "/tmp"]'
                )
            server.args = list(value)
        elif key in ("env", "headers"):
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                raise McpConfigError(
                    f"{where(dotted)} (server {name!r}) must be a table of strings, "
                    f'e.g. {key} = {{ NAME = "value" }}'
                )
            setattr(server, key, dict(value))
        elif key == "enabled":
            if not isinstance(value, bool):
                raise McpConfigError(f"{where(dotted)} (server {name!r}) must be true or false")
            server.enabled = value
    _check_shape(server, where)
    return server


def _check_shape(server: McpServerConfig, where: Where) -> None:
    prefix = f"mcp.servers.{server.name}"
    name = server.name
    if server.approve not in APPROVE_MODES:
        raise McpConfigError(
            f"{where(prefix + '.approve')} (server {name!r}) is {server.approve!r}; "
            "use one of: " + ", ".join(APPROVE_MODES)
        )
    if bool(server.command) == bool(server.url):
        raise McpConfigError(
            f"{where(prefix)}: server {name!r} needs either command (a stdio server) "
            "or url (a streamable HTTP server), not " + ("both" if server.command else "neither")
        )
    if server.url:
        if not server.url.startswith(("http://", "https://")):
            raise McpConfigError(
                f"{where(prefix + '.url')} (server {name!r}) {server.url!r} is not an http(s) URL"
            )
        for key in ("args", "env"):
            if getattr(server, key):
                raise McpConfigError(
                    f"{where(f'{prefix}.{key}')} (server {name!r}) only applies to a stdio "
                    "server (one with command)"
                )
    if server.command and server.headers:
        raise McpConfigError(
            f"{where(prefix + '.headers')} (server {name!r}) only applies to an HTTP server "
            "(one with url)"
        )
