"""Plain values shared by the MCP manager, the turn loop and /tools (no SDK import)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class McpTool:
    server: str
    name: str
    """The tool's name on its server."""
    qualified: str
    """The name the model sees: server__tool, valid as an OpenAI function name."""
    description: str
    input_schema: dict[str, Any]

    def schema(self) -> dict[str, Any]:
        """The OpenAI-style function schema offered to the model."""
        return {
            "type": "function",
            "function": {
                "name": self.qualified,
                "description": self.description,
                "parameters": self.input_schema,
            },
        }


@dataclass
class McpResult:
    text: str
    """The whole result as text (the turn cuts what the model gets)."""
    error: bool = False


@dataclass
class McpNotice:
    """A server could not start or stopped answering; reported once."""

    server: str
    message: str


@dataclass
class ServerInfo:
    """What /tools shows about one server."""

    name: str
    transport: str
    state: str  # idle | starting | ready | failed | stopped | disabled | blocked
    approve: str
    error: str
    tools: list[McpTool]
    enabled_here: bool
    """False when /tools switched the server off for this conversation."""
