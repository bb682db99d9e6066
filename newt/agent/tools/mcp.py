"""MCP tools as the turn loop sees them: schemas to offer and a guarded call.

`McpTools` belongs to one ChatSession and is the turn's `ExtraTools`. It
creates the McpManager (and so imports the SDK) only when a turn first needs
tools and applies the approval policy before every call; the turn cuts each
result to the window, once (newt.agent.tools.builtin.cap_result), and indexes it for recall.
No textual here; the TUI plugs its dialog in as `approver`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from newt.agent.tools.approval import ApprovalRequest, Approver, denied_result, skipped_result
from newt.agent.tools.builtin import ToolHandler, ToolOutcome
from newt.mcp.config import McpConfig
from newt.mcp.types import McpTool, ServerInfo
from newt.text import strip_terminal_escapes

if TYPE_CHECKING:
    from newt.mcp.manager import McpManager


@dataclass
class McpTools:
    config: McpConfig
    approver: Approver | None = None
    """Asks the user; None (print mode) runs only servers marked approve = "always"."""
    reported_schema_tokens: int = 0
    """Tokens of our schemas inside the backend's last reported prompt (set by the turn)."""
    _manager: McpManager | None = field(default=None, init=False)
    _withheld_said: bool = field(default=False, init=False)

    @property
    def configured(self) -> bool:
        return any(s.enabled and s.approve != "never" for s in self.config.servers.values())

    @property
    def manager(self) -> McpManager | None:
        return self._manager

    def _ensure_manager(self) -> McpManager:
        if self._manager is None:
            from newt.mcp.manager import McpManager  # the SDK: only when tools are needed

            self._manager = McpManager(self.config)
        return self._manager

    async def prepare(self) -> list[str]:
        """Start the servers if not yet started; returns notices not yet shown."""
        if not self.configured:
            return []
        manager = self._ensure_manager()
        await manager.ensure_started()
        return [n.message for n in manager.take_notices()] + self.withheld_notices()

    def handlers(self) -> dict[str, ToolHandler]:
        """A handler per tool of a running server, offered or not: a call of a
        tool print mode left out is answered (and reported) rather than unknown."""

        def bind(name: str) -> ToolHandler:
            async def handler(arguments: dict[str, Any]) -> ToolOutcome:
                return await self.run(name, arguments)

            return handler

        tools = self._manager.tools() if self._manager is not None else []
        return {tool.qualified: bind(tool.qualified) for tool in tools}

    def take_notices(self) -> list[str]:
        if self._manager is None:
            return []
        return [n.message for n in self._manager.take_notices()]

    def offered(self) -> list[McpTool]:
        """Tools to offer now; without an approver only those that may run unasked."""
        if self._manager is None:
            return []
        tools = self._manager.tools()
        if self.approver is None:
            tools = [t for t in tools if self._manager.approval(t.qualified) == "always"]
        return tools

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.offered()]

    def withheld(self) -> list[str]:
        """Servers whose tools print mode does not offer (they need approval)."""
        if self._manager is None or self.approver is not None:
            return []
        return sorted({t.server for t in self._manager.tools() if t not in self.offered()})

    def withheld_notices(self) -> list[str]:
        """Once per session (print mode): which servers' tools were left out, and why."""
        servers = self.withheld()
        if not servers or self._withheld_said:
            return []
        self._withheld_said = True
        names = ", ".join(repr(s) for s in servers)
        return [
            f"MCP tools of {names} are not offered: they need approval "
            '(approve = "ask") and print mode cannot ask'
        ]

    def owns(self, name: str) -> bool:
        return self._manager is not None and self._manager.owns(name)

    async def run(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Approve (or not), then call. Cancelling cancels the call."""
        manager = self._manager
        tool = manager.find(name) if manager is not None else None
        if manager is None or tool is None:
            return ToolOutcome(f"error: the tool {name!r} is not available", error=True)
        request = ApprovalRequest(tool.server, tool.name, tool.qualified, arguments)
        mode = manager.approval(name)
        if mode == "never":
            return ToolOutcome(denied_result(request), error=True)
        if mode == "ask":
            if self.approver is None:
                notice = (
                    f"skipped MCP tool {tool.qualified}: server {tool.server!r} has "
                    'approve = "ask" and print mode cannot ask (set approve = "always" to allow)'
                )
                return ToolOutcome(skipped_result(request), error=True, notice=notice)
            decision = await self.approver(request)
            if decision == "deny":
                return ToolOutcome(denied_result(request), error=True)
            if decision == "conversation":
                manager.allow_for_conversation(name)
        result = await manager.call(name, arguments)
        lost = "; ".join(n.message for n in manager.take_notices()) or None
        return ToolOutcome(result.text, result.error, notice=lost, recallable=True)

    def servers(self) -> list[ServerInfo]:
        """For /tools: live state when started, else what the config says."""
        if self._manager is not None:
            return self._manager.servers()
        return [
            ServerInfo(
                name,
                cfg.transport,
                "disabled" if not cfg.enabled else "blocked" if cfg.approve == "never" else "idle",
                cfg.approve,
                "",
                [],
                True,
            )
            for name, cfg in self.config.servers.items()
        ]

    def set_enabled(self, name: str, enabled: bool) -> bool:
        return self._manager is not None and self._manager.set_enabled(name, enabled)

    def reset_conversation(self) -> None:
        if self._manager is not None:
            self._manager.reset_conversation()

    async def aclose(self) -> None:
        if self._manager is not None:
            await self._manager.aclose()


STATE_WORDS = {
    "idle": "not started (starts with the next message)",
    "starting": "starting",
    "ready": "running",
    "failed": "failed",
    "stopped": "stopped",
    "disabled": "disabled in the config (enabled = false)",
    "blocked": 'never runs (approve = "never")',
}


def tools_report(servers: list[ServerInfo]) -> str:
    """/tools as plain text: each server, its state and approval, then its tools."""
    if not servers:
        return (
            "No MCP servers configured. Add [mcp.servers.NAME] to the config file "
            "(see the commented example in it)."
        )
    lines: list[str] = []
    for s in servers:
        state = STATE_WORDS.get(s.state, s.state)
        if s.error:
            state += f": {s.error}"
        off = "" if s.enabled_here else " — switched off for this conversation"
        lines.append(f"{s.name} ({s.transport}, approve = {s.approve}): {state}{off}")
        for tool in s.tools:
            desc = tool.description.splitlines()[0][:70] if tool.description else ""
            lines.append(f"  {tool.qualified}" + (f" — {desc}" if desc else ""))
    lines.append(
        "/tools off NAME or /tools on NAME switches a server or one tool for this conversation."
    )
    # names, descriptions and errors come from the servers: no escapes on the screen
    return strip_terminal_escapes("\n".join(lines))
