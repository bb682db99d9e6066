"""Forgetting for real: records, messages, notes and whole conversations leave
the index, the vectors and the bytes of the database file.

Every connection runs with `PRAGMA secure_delete = ON` (newt.store.db), so
what a statement deletes or overwrites is zeroed in the file. What is left is
done by `scrub` after each forget: the FTS5 index is merged (`optimize`), so no
older segment still lists the words, and the WAL is checkpointed and truncated,
so no older copy of a page survives in `newt.db-wal`. Why: "what the user
deletes is gone" means gone from every byte, not only from the screen.

A turn's message that is forgotten stays in its conversation's log as
`FORGOTTEN` (the log keeps its shape, so the working set restores the same
way), in the turn and in every fork's copy of it. Deleting a conversation
first hands the recall records a fork shares with it to that fork's copies,
so the fork keeps its memory. Rewriting the compaction summaries that quote a
forgotten message is the agent's part (newt.agent.own_memory.records): the record's
text is the memory layer's.

`MemoryEraser` is the one door the agent uses; the work is split by what goes:
`forget_records.py` (by key, by phrase, summaries), `forget_text.py` (a
note's old words everywhere), `forget_conversations.py` (a conversation, its
index, everything), `scrub.py` (the bytes), `forgotten.py` (keys and reports).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from newt.store import forget_conversations, forget_records, forget_text
from newt.store.db import Database
from newt.store.forget_events import scrub_tool_events
from newt.store.forgotten import (
    FORGOTTEN,
    FORGOTTEN_TITLE,
    Forgotten,
    NotARecordKey,
    parse_key,
)
from newt.store.models import MemoryRecord
from newt.store.scrub import scrub

__all__ = [
    "FORGOTTEN",
    "FORGOTTEN_TITLE",
    "Forgotten",
    "MemoryEraser",
    "NotARecordKey",
    "parse_key",
]


class MemoryEraser:
    """Everything that forgets, on one database; each forget ends scrubbed."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def cut_record(self, key: str, new: str, parts: list[str]) -> Forgotten:
        """Forget only `parts` of a message or reply; `new` is what is left, cuts marked."""
        return await forget_records.cut_record(self.db, key, new, parts)

    async def matching(self, query: str, limit: int = 1000) -> list[MemoryRecord]:
        """Records holding the query's words as a phrase, newest first."""
        return await forget_records.matching(self.db, query, limit)

    async def compaction_rows(self, conversations: Collection[str]) -> list[tuple[int, str, str]]:
        """(row id, conversation id, record text) of these conversations' compaction rows."""
        return await forget_records.compaction_rows(self.db, conversations)

    async def forget_keys(self, keys: Iterable[str]) -> Forgotten:
        """Forget these records in one transaction (forget_records.forget_keys)."""
        return await forget_records.forget_keys(self.db, keys)

    async def rewrite_compaction(self, row_id: int, record: str, summary: str | None) -> None:
        """Replace a compaction row's text; its record re-indexed, or dropped without one."""
        await forget_records.rewrite_compaction(self.db, row_id, record, summary)

    async def replace_text(self, old: str, new: str) -> Forgotten:
        """Every verbatim occurrence of `old` becomes `new` (forget_text.replace_text)."""
        return await forget_text.replace_text(self.db, old, new)

    async def delete_conversation(self, conv_id: str) -> Forgotten:
        """Delete a conversation and all memory holds of it; KeyError if there is none."""
        return await forget_conversations.delete_conversation(self.db, conv_id)

    async def drop_index(self, conv_id: str) -> Forgotten:
        """Take a conversation's words out of memory, keeping its log."""
        return await forget_conversations.drop_index(self.db, conv_id)

    async def forget_everything(self) -> Forgotten:
        """Every conversation, note, record and vector."""
        return await forget_conversations.forget_everything(self.db)

    async def scrub_tool_events(self, texts: Sequence[str], phrase: str = "") -> int:
        """Every tool-event string quoting these texts or holding `phrase` is
        forgotten too (forget_events); the caller scrubs after."""
        return await scrub_tool_events(self.db, texts, phrase)

    async def scrub(self) -> bool:
        """Merge the index and truncate the WAL; False when another process holds it."""
        return await scrub(self.db)
