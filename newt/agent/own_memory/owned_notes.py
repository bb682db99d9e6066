"""The notes as the session hands them to /note and the save_note tool: each
new note remembers the conversation it was made in, and a replaced or removed
note's old words are taken out of the log, the records and the summaries.

Why: deleting a conversation takes the notes made in it, and a corrected note
must never come back from any path (newt.agent.own_memory.records).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from newt.agent.conversation.log import ConversationLog
from newt.store import NoteRepo


class OwnedNotes:
    """A NoteStore (newt.memory.notes) over the store's notes."""

    def __init__(
        self,
        repo: NoteRepo,
        log: ConversationLog,
        correct: Callable[[str, str | None], Awaitable[object]],
    ) -> None:
        self.repo = repo
        self.log = log
        self.correct = correct
        self.corrected = False
        """A note was replaced or removed since the session last reloaded."""

    async def list(self) -> list[str]:
        return await self.repo.list()

    async def add(self, content: str) -> None:
        conv = self.log.conversation  # the note goes with it when it is deleted
        await self.repo.add(content, conversation_id=conv.id if conv else None)

    async def replace(self, old: str, new: str) -> None:
        await self.repo.replace(old, new)
        await self.correct(old, new)
        self.corrected = True

    async def remove(self, content: str) -> None:
        await self.repo.remove(content)
        await self.correct(content, None)
        self.corrected = True
