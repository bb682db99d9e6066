"""Asking the user before a tool runs: the request, the decision, the answers.

newt/mcp builds an `ApprovalRequest` for every call of a tool whose MCP server
says `approve = "ask"` and awaits the session's `Approver`; the TUI's approver
shows newt/ui/screens/mcp_approval.py. Print mode has no approver: it runs
only `always` tools. Here in the agent layer so the UI can name these types
without importing newt.mcp.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from newt.text import strip_terminal_escapes

Decision = Literal["once", "conversation", "deny"]


@dataclass(frozen=True)
class ApprovalRequest:
    server: str
    tool: str
    """The tool's name on its server."""
    qualified: str
    """The name the model used (server__tool)."""
    arguments: dict[str, Any]

    def pretty_arguments(self, limit: int = 4000) -> str:
        """The arguments as indented JSON, safe for a terminal, cut at `limit` chars."""
        text = json.dumps(self.arguments, indent=2, ensure_ascii=False, default=str)
        text = strip_terminal_escapes(text)
        if len(text) > limit:
            text = text[:limit] + f"\n… ({len(text) - limit} more characters)"
        return text


Approver = Callable[[ApprovalRequest], Awaitable[Decision]]


def denied_result(request: ApprovalRequest) -> str:
    """What the model is told when the user says no."""
    return (
        f"The user denied this call of {request.tool} (MCP server {request.server}). "
        "Do not call it again unless the user asks; continue without it."
    )


def skipped_result(request: ApprovalRequest) -> str:
    """What the model is told when print mode cannot ask."""
    return (
        f"newt did not run {request.tool} (MCP server {request.server}): it needs the "
        "user's approval and nobody can be asked here. Continue without it."
    )
