"""Notes persisted in SQLite; each note is also a memory record (`n<id>`).

Validation (limit, duplicates, unique-substring matching) lives in
newt.memory.notes; this repository only stores what it is told.
"""

from __future__ import annotations

from newt.store.db import Database
from newt.store.records import insert_record


class NoteRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def list(self) -> list[str]:
        cur = await self.db.conn.execute("SELECT content FROM notes ORDER BY id")
        return [r[0] for r in await cur.fetchall()]

    async def record_keys(self) -> set[str]:
        """The memory-record keys of all notes (`n<id>`)."""
        cur = await self.db.conn.execute("SELECT id FROM notes")
        return {f"n{row[0]}" for row in await cur.fetchall()}

    async def add(self, content: str, *, conversation_id: str | None = None) -> None:
        """`conversation_id`: where it was made (deleting that conversation takes it)."""
        now = self.db.clock()
        async with self.db.transaction() as conn:
            cur = await conn.execute(
                "INSERT INTO notes(content, created_at, conversation_id) VALUES (?, ?, ?)"
                " ON CONFLICT(content) DO NOTHING RETURNING id",
                (content, now, conversation_id),
            )
            row = await cur.fetchone()
            await cur.close()
            if row is not None:
                await insert_record(
                    conn,
                    key=f"n{row[0]}",
                    source="note",
                    content=content,
                    note_id=row[0],
                    created_at=now,
                )

    async def replace(self, old: str, new: str) -> None:
        async with self.db.transaction() as conn:
            cur = await conn.execute(
                "UPDATE notes SET content = ? WHERE content = ? RETURNING id", (new, old)
            )
            row = await cur.fetchone()
            await cur.close()
            if row is None:
                raise KeyError(old)
            await conn.execute(
                "UPDATE memory_records SET content = ? WHERE note_id = ?", (new, row[0])
            )

    async def remove(self, content: str) -> None:
        # The memory record goes with it through ON DELETE CASCADE.
        async with self.db.transaction() as conn:
            await conn.execute("DELETE FROM notes WHERE content = ?", (content,))
