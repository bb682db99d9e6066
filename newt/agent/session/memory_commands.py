"""`/note` and `/compact`: the user's commands that change what memory holds now
(ChatSession owns one).

A note replaced or removed (by /note or the model's save_note) rewrites the
log without its old words (newt.agent.own_memory.owned_notes), so the working set is
rebuilt from the log after it (Conversations.after_correction, which the
session's turn also runs). A /compact folds everything but the newest turn into the record and
waits for its summary, under the session gate and the conversation's writer lock.
"""

from __future__ import annotations

from newt.agent import events as ev
from newt.agent.errors import SessionError
from newt.agent.own_memory.note_command import is_read_only_note_command, run_note_command
from newt.agent.own_memory.owned_notes import OwnedNotes
from newt.agent.session.conversations import Conversations
from newt.agent.session.model_link import ModelLink
from newt.agent.session.turn_gate import TurnGate


class MemoryCommands:
    def __init__(
        self, gate: TurnGate, conversations: Conversations, owned_notes: OwnedNotes, link: ModelLink
    ) -> None:
        self.gate = gate
        self.conversations = conversations
        self.log = conversations.log
        self.summaries = conversations.summaries
        self.owned_notes = owned_notes
        self.link = link
        self.notes = link.notes

    async def note(self, arg: str) -> str:
        """The /note sub-language: `<text>`, `replace <old> => <new>`, `remove <text>`, `list`."""
        if is_read_only_note_command(arg):
            return await run_note_command(self.notes, self.owned_notes, arg)
        if self.log.unsaved:  # incognito writes nothing to disk, a note neither
            raise SessionError("incognito saves nothing, notes neither: /incognito off first")
        async with self.gate:
            answer = await run_note_command(self.notes, self.owned_notes, arg)
            await self.conversations.after_correction(self.owned_notes)
            self.link.recall_parts.stored()
            return answer

    async def compact(self, focus: str | None = None) -> ev.Compacted | None:
        """`/compact [focus]`: fold everything but the newest turn into the record
        and wait for its summary (the user asked for it)."""
        async with self.gate, self.conversations.writer():
            conv = self.log.conversation
            if conv is None:
                return None
            if await self.log.changed_elsewhere():
                await self.conversations.load(conv)
            provider = self.link.provider
            if not await provider.compact(focus or None):
                return None
            await self.summaries.cancel()
            owing = provider.summarizing()
            if owing is not None:
                await owing.refresh_summary()
            return await self.log.persist_compaction(provider, "manual")
