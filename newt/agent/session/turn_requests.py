"""What a turn is run with: the TurnContext each turn (and each /recall
preview) is built from, and the conversation's side of a turn that started.

Everything the turn touches and nothing else: the log, the provider, the
evidence, the client and what the model can do (through the model link), the
built-in tools on the session's notes (save_note is not offered in an
incognito conversation: nothing of it is remembered), the MCP tools, the
settings and the system prompt. Why a part of its own: the turn's inputs are
read in one place, so Turns only orders the waits around them.
"""

from __future__ import annotations

from newt.agent.conversation.log import ConversationLog
from newt.agent.own_memory.owned_notes import OwnedNotes
from newt.agent.session.model_link import ModelLink
from newt.agent.session.settings import SettingsControls
from newt.agent.tools.builtin import TOOL_SCHEMAS
from newt.agent.tools.mcp import McpTools
from newt.agent.tools.toolset import ToolContext, tool_handlers
from newt.agent.turn.image_parts import TurnAttachments
from newt.agent.turn.runner import TurnContext


class TurnRequests:
    def __init__(
        self,
        link: ModelLink,
        settings: SettingsControls,
        log: ConversationLog,
        owned_notes: OwnedNotes,
        mcp: McpTools,
    ) -> None:
        self.link = link
        self.settings = settings
        self.log = log
        self.owned_notes = owned_notes
        """The notes the model's save_note changes (attributed to the conversation)."""
        self.mcp = mcp

    def context(self, attachments: TurnAttachments | None = None) -> TurnContext:
        link = self.link
        tools = ToolContext(
            notebook=link.notes,
            notes=self.owned_notes,
            recall=link.recall,
            recall_budget=link.evidence.budget(),
        )
        handlers = tool_handlers(tools)
        schemas = list(TOOL_SCHEMAS)
        if self.log.keeps_nothing:  # nothing of an incognito conversation is remembered
            handlers.pop("save_note", None)
            schemas = [t for t in schemas if t.get("function", {}).get("name") != "save_note"]
        return TurnContext(
            log=self.log,
            provider=link.provider,
            evidence=link.evidence,
            client=link.client,
            capabilities=link.capabilities,
            tools=handlers,
            tool_schemas=schemas,
            system_prompt=self.settings.system_prompt,
            tokens_for=link.estimate_tokens,
            content_tokens=link.content_tokens,
            extra_tools=self.mcp if self.mcp.configured else None,
            settings=self.settings.settings,
            attachments=attachments,
        )

    async def conversation_started(self) -> None:
        """The turn stored its first row: the conversation's settings are stored with it."""
        await self.settings.save_new()
