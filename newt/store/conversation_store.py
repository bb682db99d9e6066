"""Where the open conversation lives: the database, or, incognito, memory only.

An incognito conversation leaves nothing on disk: its row, its
turns, its settings and its compaction records live in an in-memory SQLite
database of the same schema, which goes when the session closes. The parts
that write the conversation (the log, Conversations, the edits, the
settings) hold one `ConversationStore`, a `Store` whose conversation
repositories point at the database or at that memory, whichever holds the
open conversation; notes and the model facts newt measured stay on the
database, and recall reads the database (the rest of memory). A conversation
made incognito midway is copied into memory and then deleted from the
database as `newt delete` deletes one (zeroed, the WAL truncated).
"""

from __future__ import annotations

from newt.store import Conversation, Database, Store
from newt.store.db import fetch_all

MEMORY = ":memory:"
FIRST_MEMORY_TURN = 1 << 50
"""Turns made in memory are numbered from here, so their keys (t<turn>) never
name a turn of the database: recall excludes the keys the working set holds."""
_COPIED = ("conversations", "turns", "conversation_settings")


class ConversationStore(Store):
    def __init__(self, disk: Store) -> None:
        super().__init__(disk.db)
        self.disk = disk
        self.notes = disk.notes
        self.capabilities = disk.capabilities
        self._memory: Store | None = None

    @property
    def in_memory(self) -> bool:
        """The open conversation (or the next one) lives in memory only."""
        return self._memory is not None and self.db is self._memory.db

    async def use_memory(self) -> None:
        if self._memory is None:
            db = await Database.open(MEMORY)
            await db.conn.execute("PRAGMA temp_store = MEMORY")  # no temporary file either
            await db.conn.execute(
                "INSERT INTO sqlite_sequence(name, seq) VALUES ('turns', ?)", (FIRST_MEMORY_TURN,)
            )
            self._memory = Store(db)
        self._bind(self._memory)

    def use_disk(self) -> None:
        self._bind(self.disk)

    def _bind(self, store: Store) -> None:
        self.db = store.db
        self.conversations = store.conversations
        self.turns = store.turns
        self.settings = store.settings
        self.records = store.records

    async def bind_for(self, conv: Conversation) -> None:
        """Point at whichever database holds `conv`."""
        if self._memory is not None and await self._memory.conversations.get(conv.id):
            self._bind(self._memory)
        else:
            self.use_disk()

    async def copy_to_memory(self, conv: Conversation) -> None:
        """Copy `conv` (its row, turns and settings) from the database into
        memory, ids kept; the caller then deletes it from the database."""
        disk = self.disk.db
        await self.use_memory()
        assert self._memory is not None
        memory = self._memory.db
        # An in-memory conversation left for another cannot be gone back to (no
        # list shows it): it goes now, and its rows cannot clash with the copy's.
        async with memory.transaction() as conn:
            await conn.execute("DELETE FROM conversations")
        await memory.conn.execute("PRAGMA foreign_keys = OFF")  # copies point at other rows
        async with memory.transaction() as dest:
            for table in _COPIED:
                column = "id" if table == "conversations" else "conversation_id"
                rows = await fetch_all(
                    disk.conn, f"SELECT * FROM {table} WHERE {column} = ?", (conv.id,)
                )
                for row in rows:
                    names = list(row.keys())
                    values = [None if n == "parent_id" else row[n] for n in names]
                    marks = ", ".join("?" for _ in names)
                    await dest.execute(
                        f"INSERT INTO {table}({', '.join(names)}) VALUES ({marks})", values
                    )
            await dest.execute("UPDATE conversations SET incognito = 1 WHERE id = ?", (conv.id,))
        await memory.conn.execute("PRAGMA foreign_keys = ON")
        conv.incognito = True

    async def drop_memory(self, conv_id: str) -> None:
        """Let an in-memory conversation go (nothing of it was ever on disk)."""
        if self._memory is not None:
            await self._memory.conversations.delete(conv_id)

    async def close(self) -> None:
        """Close the memory (the database is the session's to close)."""
        if self._memory is not None:
            self.use_disk()
            await self._memory.close()
            self._memory = None
