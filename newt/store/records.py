"""Memory records: the recallable copy of every turn, note and compaction summary.

Keys are short and stable: `t<turn id>`, `c<turn id>` for a compaction record,
`n<note id>`. The recall engine (newt.recall) searches `memory_fts`.
"""

from __future__ import annotations

import time

import aiosqlite

from newt.store.db import Database
from newt.store.models import MemoryRecord, RecordSource


async def insert_record(
    conn: aiosqlite.Connection,
    *,
    key: str,
    source: RecordSource,
    content: str,
    conversation_id: str | None = None,
    turn_id: int | None = None,
    note_id: int | None = None,
    created_at: float | None = None,
) -> int:
    """Insert inside the caller's transaction, so a record never exists without its source."""
    cur = await conn.execute(
        "INSERT INTO memory_records(key, source, conversation_id, turn_id, note_id, content,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT(key) DO UPDATE SET content = excluded.content RETURNING id",
        (
            key,
            source,
            conversation_id,
            turn_id,
            note_id,
            content,
            time.time() if created_at is None else created_at,
        ),
    )
    row = await cur.fetchone()  # lastrowid is stale when the key already existed
    await cur.close()
    return int(row[0]) if row else 0


def row_to_record(row: aiosqlite.Row, score: float = 0.0) -> MemoryRecord:
    return MemoryRecord(
        id=row["id"],
        key=row["key"],
        source=row["source"],
        conversation_id=row["conversation_id"],
        content=row["content"],
        access_count=row["access_count"],
        created_at=row["created_at"],
        score=score,
    )


class RecordRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def get(self, key: str) -> MemoryRecord | None:
        """Fetch one record verbatim by its retrieval key."""
        cur = await self.db.conn.execute("SELECT * FROM memory_records WHERE key = ?", (key,))
        row = await cur.fetchone()
        return row_to_record(row) if row else None

    async def add(
        self,
        key: str,
        source: RecordSource,
        content: str,
        *,
        conversation_id: str | None = None,
        created_at: float | None = None,
    ) -> int:
        async with self.db.transaction() as conn:
            return await insert_record(
                conn,
                key=key,
                source=source,
                content=content,
                conversation_id=conversation_id,
                created_at=created_at,
            )

    async def delete(self, key: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute("DELETE FROM memory_records WHERE key = ?", (key,))

    async def count(self) -> int:
        cur = await self.db.conn.execute("SELECT COUNT(*) FROM memory_records")
        row = await cur.fetchone()
        return int(row[0]) if row else 0
