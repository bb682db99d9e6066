"""What the user chose for the current conversation: tools allowed, servers switched off.

Both last until the conversation changes (`reset`): "allow for this
conversation" in the approval dialog and /tools off|on must not leak into
the next one. The config's own `approve` mode is the default under them.
"""

from __future__ import annotations

from newt.mcp.types import McpTool


class ConversationChoices:
    """Switches and approvals of one conversation, keyed by server or qualified tool name."""

    def __init__(self) -> None:
        self._off: set[str] = set()
        self._allowed: set[str] = set()

    def is_on(self, name: str) -> bool:
        """False when /tools switched this server or tool off here."""
        return name not in self._off

    def offers(self, tool: McpTool) -> bool:
        return self.is_on(tool.server) and self.is_on(tool.qualified)

    def switch(self, name: str, enabled: bool) -> None:
        if enabled:
            self._off.discard(name)
        else:
            self._off.add(name)

    def approval(self, tool: McpTool, configured: str) -> str:
        """ "always", "ask" or "never": the config's mode, unless the user allowed it here."""
        if configured == "ask" and tool.qualified in self._allowed:
            return "always"
        return configured

    def allow(self, qualified: str) -> None:
        self._allowed.add(qualified)

    def reset(self) -> None:
        self._off.clear()
        self._allowed.clear()
