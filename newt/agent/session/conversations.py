"""Which conversation the session holds: a fresh one, a resumed one, or the
same one rebuilt from its log (ChatSession owns one).

Every way in ends in the same restore: the provider's working set rebuilt from
the durable log (newt.memory.restore), the conversation's settings read back
with the anchor shift they owe, the resident turns tracked, and a restore that
had to fold stored as a compaction record. The evidence the last turn carried
(`last_retention`) belongs to the conversation, so it goes with every switch.

The caller holds the session gate for `load`, `reload` and `fresh`; the public
operations (`new_conversation`, `resume`, `continue_latest`) take it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from newt.agent.conversation.log import ConversationLog
from newt.agent.errors import SessionError, resolve_conversation
from newt.agent.own_memory.owned_notes import OwnedNotes
from newt.agent.session.background_summary import BackgroundSummary
from newt.agent.session.export import export_conversation
from newt.agent.session.model_link import ModelLink
from newt.agent.session.settings import SettingsControls
from newt.agent.session.turn_gate import TurnGate
from newt.agent.tools.mcp import McpTools
from newt.memory.restore import conversation_turns_from_log
from newt.recall import RetentionReport
from newt.store import Conversation
from newt.store.conversation_store import ConversationStore
from newt.store.live_log import live_rows
from newt.store.writer_lock import conversation_writer


class Conversations:
    def __init__(
        self,
        gate: TurnGate,
        store: ConversationStore,
        log: ConversationLog,
        settings: SettingsControls,
        mcp: McpTools,
        link: ModelLink,
    ) -> None:
        self.gate = gate
        self.store = store
        self.disk = store.disk
        """The database: where every conversation but an incognito one is."""
        self.log = log
        self.summaries = BackgroundSummary(
            gate, log, lambda: link.provider, self.writer, self.reload_current
        )
        """Summaries of folded turns, written after the reply is shown; stopped by every switch."""
        self.settings = settings
        self.mcp = mcp
        self.link = link
        self.last_retention: RetentionReport | None = None
        """The evidence the last turn carried (None after any switch)."""

    @property
    def conversation(self) -> Conversation | None:
        return self.log.conversation

    async def new_conversation(self) -> None:
        """Start fresh: the provider is reset, its configuration kept."""
        async with self.gate:
            await self.summaries.cancel()
            self.fresh()

    async def resume(self, id_or_prefix: str) -> Conversation:
        conv = await resolve_conversation(self.disk, id_or_prefix)
        async with self.gate:
            await self.load(conv)
        return conv

    async def continue_latest(self) -> Conversation | None:
        conv = await self.disk.conversations.latest()
        if conv is not None:
            async with self.gate:
                await self.load(conv)
        return conv

    async def list_conversations(self) -> list[Conversation]:
        """Every saved conversation, newest first (an incognito one is on no list)."""
        return await self.disk.conversations.list()

    async def search_conversations(self, text: str) -> list[Conversation]:
        return await self.disk.conversations.search(text)

    async def export(self, fmt: str = "md") -> str:
        held = self.log.conversation
        if held is None:
            raise SessionError("nothing to export yet: this conversation has no turns")
        conv = await self.store.conversations.get(held.id) or held
        return await export_conversation(self.store, conv, fmt)

    async def rename_conversation(self, id_or_prefix: str, title: str) -> Conversation:
        conv = await resolve_conversation(self.disk, id_or_prefix)
        try:
            await self.disk.conversations.rename(conv.id, title)
        except ValueError as exc:
            raise SessionError(str(exc)) from exc
        held = self.log.conversation
        if held is not None and held.id == conv.id:
            held.title = " ".join(title.split())
        return await self.disk.conversations.get(conv.id) or conv

    async def switch_model(self, model: str) -> None:
        """/model: the budget is re-resolved for it and the history restored."""
        async with self.gate:
            self.log.model = model
            await self.link.switch(model)
            conv = self.log.conversation
            if conv is not None:
                await self.store.conversations.set_model(conv.id, model, self.link.base_url)
                await self.load(conv)

    # -- behind the gate ---------------------------------------------------

    def fresh(self) -> None:
        """Leave the conversation for a new one (nothing of it stays in the working set)."""
        self.link.provider.reset()
        self.log.clear()
        self.settings.for_new()
        self.last_retention = None
        self.mcp.reset_conversation()

    async def load(self, conv: Conversation) -> None:
        """Switch to `conv` (or rebuild it): a summary in flight is stopped first."""
        await self.summaries.cancel()
        await self.reload(conv)

    async def reload(self, conv: Conversation) -> None:
        """Rebuild the working set from the log."""
        provider = self.link.provider
        provider.reset()
        stored = await self.log.load(conv)
        provider.restore_turns(conversation_turns_from_log(stored))
        await self.settings.for_loaded(conv, live_rows(stored))  # before any figure is read
        self.log.track_resident(stored, provider.resident_turns())
        self.last_retention = None
        self.mcp.reset_conversation()
        # a restore that had to fold (a crash between a turn and its record)
        await self.log.persist_compaction(provider, "restore")
        # A summary the log still owes starts after the next turn, not now:
        # on a one-slot local server it would hold up the user's first reply.

    async def after_correction(self, owned: OwnedNotes) -> None:
        """A note was replaced or removed (by /note or the model's save_note):
        the log was rewritten without its old words, so the working set is
        rebuilt from it (the caller holds the gate)."""
        if owned.corrected:
            owned.corrected = False
            await self.reload_current()

    async def reload_current(self) -> None:
        if self.log.conversation is not None:
            await self.reload(self.log.conversation)

    def writer(
        self, on_wait: Callable[[int | None], object] | None = None
    ) -> AbstractAsyncContextManager[None]:
        """This conversation's cross-process writer lock (none needed before it exists)."""
        conv = self.log.conversation
        if conv is None:
            return contextlib.nullcontext()
        return conversation_writer(self.store.db.path, conv.id, on_wait=on_wait)
