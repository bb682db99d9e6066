"""The session's controls for MCP tools, as the UI and print mode use them."""

from __future__ import annotations

from newt.agent.tools.approval import Approver
from newt.agent.tools.mcp import McpTools, tools_report


class McpControls:
    """ChatSession owns one, over the session's McpTools."""

    def __init__(self, mcp: McpTools) -> None:
        self.mcp = mcp
        """Tools of the configured MCP servers (newt/mcp); started by the first turn."""

    def set_tool_approver(self, approver: Approver | None) -> None:
        """Who is asked before a tool with approve = "ask" runs (None: print mode)."""
        self.mcp.approver = approver

    def tools_report(self) -> str:
        """/tools: the MCP servers, their state and their tools, as plain text."""
        return tools_report(self.mcp.servers())

    def set_tool_enabled(self, name: str, enabled: bool) -> bool:
        """Switch a server or one tool for this conversation; False if unknown."""
        return self.mcp.set_enabled(name, enabled)
