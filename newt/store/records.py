"""Memory records: the recallable copy of every message, note and compaction summary.

Keys are short and stable: `t<turn id>` for the user's message of a turn,
`r<turn id>` for its reply, `t<turn id>.<n>` for a tool result,
`c<turn id>` for a compaction record, `n<note id>`. Each record carries its
kind (`source`), who said it (`role`: user, assistant, tool, or None for a
note or summary) and when (`said_at`). The recall engine searches `memory_fts`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import aiosqlite

from newt.store.db import Database
from newt.store.models import MemoryRecord, RecordRole, RecordSource


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
    role: RecordRole | None = None,
    said_at: float | None = None,
) -> int:
    """Insert inside the caller's transaction, so a record never exists without its source.

    Nothing is indexed for an incognito conversation (returns 0): the store
    itself keeps it out of memory, whichever path wrote the words."""
    if conversation_id is not None:
        cur = await conn.execute(
            "SELECT incognito FROM conversations WHERE id = ?", (conversation_id,)
        )
        found = await cur.fetchone()
        await cur.close()
        if found is not None and found[0]:
            return 0
    created = time.time() if created_at is None else created_at
    cur = await conn.execute(
        "INSERT INTO memory_records(key, source, conversation_id, turn_id, note_id, content,"
        " created_at, role, said_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT(key) DO UPDATE SET content = excluded.content RETURNING id",
        (
            key,
            source,
            conversation_id,
            turn_id,
            note_id,
            content,
            created,
            role,
            created if said_at is None else said_at,
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
        role=row["role"],
        said_at=row["said_at"] if row["said_at"] is not None else row["created_at"],
        turn_id=row["turn_id"],
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
        role: RecordRole | None = None,
    ) -> int:
        async with self.db.transaction() as conn:
            return await insert_record(
                conn,
                key=key,
                source=source,
                content=content,
                conversation_id=conversation_id,
                created_at=self.db.clock() if created_at is None else created_at,
                role=role,
            )

    async def neighbours(self, record: MemoryRecord) -> list[MemoryRecord]:
        """The messages said around a turn's message: the other half of its turn,
        and the reply before it (for the user's words) or the next message
        (for a reply), in the same conversation."""
        return (await self.neighbours_of([record]))[0]

    async def neighbours_of(self, records: Sequence[MemoryRecord]) -> list[list[MemoryRecord]]:
        """`neighbours` of each record (in the same order), read in one statement."""
        parts: list[str] = []
        params: list[object] = []
        for n, record in enumerate(records):
            if record.turn_id is None or record.role not in ("user", "assistant"):
                continue
            partner = "assistant" if record.role == "user" else "user"
            if record.role == "user":
                step = "turn_id < ? ORDER BY turn_id DESC"
            else:
                step = "turn_id > ? ORDER BY turn_id"
            parts.append(
                f"SELECT {n} AS hit, 0 AS part, * FROM memory_records"
                " WHERE turn_id = ? AND role = ?"
            )
            parts.append(
                f"SELECT {n}, 1, * FROM (SELECT * FROM memory_records"
                f" WHERE conversation_id IS ? AND role = ? AND {step} LIMIT 1)"
            )
            params += [record.turn_id, partner, record.conversation_id, partner, record.turn_id]
        found: list[list[MemoryRecord]] = [[] for _ in records]
        if parts:
            rows = await self.db.conn.execute_fetchall(
                " UNION ALL ".join(parts) + " ORDER BY hit, part, id", params
            )
            for row in rows:
                found[row["hit"]].append(row_to_record(row))
        return found

    async def delete(self, key: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute("DELETE FROM memory_records WHERE key = ?", (key,))

    async def newest(self, limit: int) -> list[MemoryRecord]:
        """The newest records of every kind, newest first (what an empty search lists)."""
        rows = await self.db.conn.execute_fetchall(
            "SELECT * FROM memory_records ORDER BY said_at DESC, id DESC LIMIT ?", (limit,)
        )
        return [row_to_record(r) for r in rows]

    async def count(self) -> int:
        """How many memory records there are, of every kind (what `forget --all` takes)."""
        cur = await self.db.conn.execute("SELECT COUNT(*) FROM memory_records")
        row = await cur.fetchone()
        return int(row[0]) if row else 0
