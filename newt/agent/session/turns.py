"""How the session runs a turn (ChatSession owns one; its send, recall_preview
and turn_context forward here).

A turn waits for a background probe still in flight (it is budgeted for what
the backend said) and for an overdue summary, then takes the session lock and
the conversation's writer lock (another newt writing to it is waited for, and
said so). Inside them: a summary in flight gives way, a log another process
changed is reloaded, the replaced turn of a regenerate or edit leaves the
working set (newt.agent.session.edits), and newt.agent.turn.runner runs the turn
on a TurnContext built here: everything the turn touches and nothing else.
After it: the evidence it carried is kept for /memory, a replacement that was
not stored is undone, a note the model corrected rebuilds the working set, and
the summary owed and the embedding of the new turn start.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing

from newt.agent import events as ev
from newt.agent.errors import SessionError
from newt.agent.own_memory.commands import MemoryCommands
from newt.agent.own_memory.owned_notes import OwnedNotes
from newt.agent.session.background_probe import BackgroundProbe
from newt.agent.session.background_summary import BackgroundSummary
from newt.agent.session.conversation_log import ConversationLog
from newt.agent.session.conversations import Conversations
from newt.agent.session.edits import Edits
from newt.agent.session.model_link import ModelLink
from newt.agent.session.settings import SettingsControls
from newt.agent.tools.builtin import TOOL_SCHEMAS
from newt.agent.tools.mcp import McpTools
from newt.agent.tools.toolset import ToolContext, tool_handlers
from newt.agent.turn.image_parts import TurnAttachments
from newt.agent.turn.runner import TurnContext, TurnRunner
from newt.config import Config
from newt.local.models import speeds
from newt.local.server import cache_dir
from newt.memory.notes import NoteBook
from newt.recall import RetentionReport


class Turns:
    def __init__(
        self,
        config: Config,
        lock: asyncio.Lock,
        log: ConversationLog,
        summaries: BackgroundSummary,
        link: ModelLink,
        lifecycle: Conversations,
        edits: Edits,
        settings: SettingsControls,
        commands: MemoryCommands,
        background: BackgroundProbe,
        mcp: McpTools,
        owned_notes: OwnedNotes,
        *,
        notes: NoteBook,
    ) -> None:
        self.config = config
        self.lock = lock
        self.log = log
        self.summaries = summaries
        self.link = link
        self.conversations = lifecycle
        self.edits = edits
        self.settings = settings
        self.commands = commands
        self.background = background
        self.mcp = mcp
        self.owned_notes = owned_notes
        self.notes = notes

    def turn_context(self, attachments: TurnAttachments | None = None) -> TurnContext:
        link = self.link
        tools = ToolContext(
            notebook=self.notes,
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

    async def send(
        self, text: str, *, replace_last: bool = False
    ) -> AsyncGenerator[ev.AgentEvent, None]:
        """Run one user turn (see newt.agent.turn.runner). Cancelling keeps the partial reply.
        `replace_last`: the turn replaces the last one (regenerate with "", edit)."""
        if not text.strip() and not replace_last:
            raise SessionError("the message is empty")
        await self.background.probed()  # the turn is budgeted for what the backend said
        # More than one fold's summary owed: it lands before this request
        # (BackgroundSummary.settle); otherwise preempt() below makes it wait.
        await self.summaries.settle(self.config.backend.timeout_s)
        async with self.lock:
            waited: list[int | None] = []
            async with self.conversations.writer(waited.append):
                if waited:
                    yield ev.Notice(
                        "another newt was writing to this conversation; continued after it"
                    )
                await self.summaries.preempt()  # the user's turn goes first
                conv = self.log.conversation
                if await self.log.changed_elsewhere() and conv is not None:
                    await self.conversations.load(conv)  # build on what the other one wrote
                text, attached = await self.edits.before_turn(text, replace_last)
                runner = TurnRunner(self.turn_context(attached), text)
                try:
                    async with aclosing(runner.run()) as events:
                        async for event in events:
                            if isinstance(event, ev.RetainedEvidence):
                                self.conversations.last_retention = event.report
                            elif isinstance(event, ev.TurnStarted):
                                await self.settings.save_new()  # the conversation exists now
                            elif isinstance(event, ev.TurnDone):
                                self._keep_speed(event)
                            yield event
                finally:
                    self.conversations.last_retention = runner.last_retention
                    self.edits.end_replacement()
                    await self.commands.after_correction()  # the model's save_note replaced one
        self.summaries.start()
        self.link.recall_parts.stored()  # the turn (and any record) can be embedded now

    def _keep_speed(self, done: ev.TurnDone) -> None:
        """A model newt runs: what it read and wrote a second here, for the model
        lists to show (newt.local.models.speeds)."""
        write = done.stats.tokens_per_second if done.stats is not None else None
        read = self.link.capabilities.prompt_rate
        if self.config.server_context_tokens and done.status == "complete" and read and write:
            speeds.record(cache_dir(), self.config.backend.model, read, write)

    def regenerate(self) -> AsyncGenerator[ev.AgentEvent, None]:
        """Run the last turn's prompt again; the new reply replaces the old turn."""
        return self.send("", replace_last=True)

    def edit_last(self, text: str) -> AsyncGenerator[ev.AgentEvent, None]:
        """Send `text` in place of the last prompt; the new turn replaces the old one."""
        if not text.strip():
            raise SessionError("the message is empty")
        return self.send(text, replace_last=True)

    async def recall_preview(self, text: str) -> tuple[RetentionReport | None, str]:
        """`/recall TEXT`: the capsules a message with this text would carry
        now, and their block as sent (empty: none); nothing is counted."""
        if not text.strip():
            raise SessionError("give the text to look up: /recall TEXT")
        async with self.lock:
            return await TurnRunner(self.turn_context(), text).preview_evidence()
