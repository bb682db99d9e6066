"""FakeMcpControls, the fake McpControlsApi: a session with no MCP server.

/tools says none is configured and no tool can be switched; the approver the UI
hands over is kept in `approver`, for a test to check or call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from newt.agent.tools.approval import Approver

if TYPE_CHECKING:
    from newt.ui.session_api import McpControlsApi


@dataclass
class FakeMcpControls:
    """No MCP tools: the report says so, enabling any tool fails, the approver is kept."""

    approver: Approver | None = None

    def set_tool_approver(self, approver: Approver | None) -> None:
        self.approver = approver

    def tools_report(self) -> str:
        return "No MCP servers configured."

    def set_tool_enabled(self, name: str, enabled: bool) -> bool:
        return False  # no server, no tool of that name


if TYPE_CHECKING:

    def _fits(controls: FakeMcpControls) -> McpControlsApi:
        return controls  # mypy: the fake is all the UI asks of MCP tools
