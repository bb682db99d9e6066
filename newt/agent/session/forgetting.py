"""Forgetting, deleting and keeping out, as the session runs them (ChatSession owns one).

`MemoryRecords` (newt.agent.own_memory.records) does the work on the store and the
recall engine; this runs each change under the session gate, a summary in
flight stopped first (it may quote what goes), and then reloads what the
session holds (the notes, and the conversation's working set if the change
touched it), so no later request carries what went. A deleted conversation
leaves the session in a fresh one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from newt.agent.errors import resolve_conversation
from newt.agent.own_memory.records import ForgetReport, MemoryRecords
from newt.agent.session.conversations import Conversations
from newt.agent.session.turn_gate import TurnGate
from newt.memory.notes import NoteBook
from newt.store import Conversation
from newt.store.forget import Forgotten

Work = Callable[[], Awaitable[tuple[ForgetReport, Forgotten]]]


class Forgetting:
    def __init__(
        self, gate: TurnGate, conversations: Conversations, records: MemoryRecords, notes: NoteBook
    ) -> None:
        self.gate = gate
        self.conversations = conversations
        self.store = conversations.store
        self.log = conversations.log
        self.summaries = conversations.summaries
        self.admin = records
        self.notes = notes

    @property
    def incognito(self) -> bool:
        """This conversation (or the next one, before its first turn) is kept out of memory."""
        return self.log.keeps_nothing

    @property
    def unsaved(self) -> bool:
        """This conversation (or the next) lives in memory only: nothing of it is on disk."""
        return self.log.unsaved

    async def set_incognito(self, on: bool) -> ForgetReport | None:
        """On: this conversation leaves the disk (newt.store.conversation_store):
        it goes on in memory, and what was stored of it is deleted as `newt
        delete` deletes (the report says what went). Off: an incognito
        conversation stays unsaved and a new one, which memory holds, starts
        (an older one stored before incognito kept nothing lets memory hold
        its next turns)."""
        async with self.gate:
            conv = self.log.conversation
            self.log.incognito = on  # and the conversations /new starts after it
            if conv is None:
                return None
            if not on:
                if self.store.in_memory:
                    await self.summaries.cancel()
                    self.conversations.fresh()
                    await self.store.drop_memory(conv.id)
                else:
                    await self.admin.let_in(conv)
                return None
            if self.store.in_memory:
                return None
            await self.summaries.cancel()
            await self.store.copy_to_memory(conv)
            report, _ = await self.admin.delete_conversation(conv)
            await self.notes.reload(self.store.notes)  # notes made in it went with it
            await self.conversations.reload(conv)
            return report

    async def forget(self, keys: list[str]) -> ForgetReport:
        """Forget these records everywhere (newt.agent.own_memory.records)."""
        return await self._forgetting(lambda: self.admin.forget(keys))

    async def forget_matching(self, query: str, *, sentences: bool = False) -> ForgetReport:
        return await self._forgetting(
            lambda: self.admin.forget_matching(query, sentences=sentences)
        )

    async def forget_everything(self) -> ForgetReport:
        return await self._forgetting(self.admin.forget_everything)

    async def delete_conversation(self, id_or_prefix: str) -> tuple[Conversation, ForgetReport]:
        """Delete a conversation (unique id prefix) and everything of it; the
        open one is left for a fresh conversation."""
        conv = await resolve_conversation(self.store.disk, id_or_prefix)
        report = await self._forgetting(lambda: self.admin.delete_conversation(conv))
        return conv, report

    async def _forgetting(self, work: Work) -> ForgetReport:
        async with self.gate:
            await self.summaries.cancel()  # a summary in flight may quote it
            report, done = await work()
            await self._after_forget(done.touched)
        return report

    async def _after_forget(self, touched: set[str]) -> None:
        await self.notes.reload(self.store.notes)  # in place: the provider reads this book
        self.conversations.last_retention = None
        conv = self.log.conversation
        if conv is None:
            return
        current = await self.store.conversations.get(conv.id)
        if current is None:  # deleted: the session goes on in a fresh conversation
            self.conversations.fresh()
        elif conv.id in touched:
            await self.conversations.reload(current)
        else:
            conv.title = current.title
