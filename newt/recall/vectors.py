"""Record vectors in the same SQLite file (table `memory_vectors`, migration m007),
and nearest-neighbour search over them in plain Python.

A record is embedded in chunks (see embedder.chunks); each chunk's vector is
L2-normalized and stored as a float32 blob, so cosine similarity is a dot
product. A record's similarity to a query is that of its best chunk. A record
that could not be embedded at all gets one row with an empty blob, so the
background queue does not offer it again.

Search is exact, with no extension and no numpy: the vectors of one space
are kept in memory as tuples of floats and `math.dist` (a C loop) gives the
distance, from which the cosine follows (|a - b|^2 = 2 - 2 cos for unit
vectors). Measured on this 2-core machine at 576 dimensions (SmolLM2), about
17 us a vector: 3,000 chunks in ~50 ms. sqlite-vec would be faster but cannot
be loaded here (this Python's sqlite3 is built without extension loading, as
are some distributions' and macOS's), and a conversation store holds a few
thousand chunks; past MAX_SCANNED only the newest are searched, as the
lexical path bounds its bm25 work.
"""

from __future__ import annotations

import array
import heapq
import math
import sys
from collections.abc import Collection, Sequence

from newt.store.db import Database

# The newest chunks searched per query (about 60 ms at 576 dimensions).
MAX_SCANNED = 4000


def normalized(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(math.fsum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0 else [0.0 for _ in vector]


def pack(vector: Sequence[float]) -> bytes:
    """Little-endian float32 bytes of the unit vector."""
    values = array.array("f", normalized(vector))
    if sys.byteorder != "little":
        values.byteswap()
    return values.tobytes()


def unpack(blob: bytes) -> tuple[float, ...]:
    values = array.array("f")
    values.frombytes(blob)
    if sys.byteorder != "little":
        values.byteswap()
    return tuple(values)


class VectorIndex:
    """Stored vectors of one embedding space, and search over them."""

    def __init__(self, db: Database, space: str, *, max_scanned: int = MAX_SCANNED) -> None:
        self.db = db
        self.space = space
        self.max_scanned = max_scanned
        # rowid of memory_vectors -> (record id, unit vector); refreshed by rowid.
        self._cache: dict[int, tuple[int, tuple[float, ...]]] = {}
        self._seen_rowid = 0
        self._skipped = 0  # rows of another dimension (a model changed under one name)
        self._dim: int | None = None

    async def pending(self, limit: int) -> list[tuple[int, str]]:
        """(record id, content) of records with no vector in this space, newest first."""
        cur = await self.db.conn.execute(
            "SELECT r.id, r.content FROM memory_records r WHERE NOT EXISTS ("
            " SELECT 1 FROM memory_vectors v WHERE v.record_id = r.id AND v.space = ?)"
            " ORDER BY r.id DESC LIMIT ?",
            (self.space, limit),
        )
        return [(row[0], row[1]) for row in await cur.fetchall()]

    async def store(self, record_id: int, vectors: Sequence[Sequence[float]]) -> None:
        """Replace the record's vectors in this space (none: mark it unembeddable)."""
        blobs = [pack(v) for v in vectors] or [b""]
        async with self.db.transaction() as conn:
            await conn.execute(
                "DELETE FROM memory_vectors WHERE record_id = ? AND space = ?",
                (record_id, self.space),
            )
            # The record may have been deleted meanwhile: insert only if it exists.
            for chunk, blob in enumerate(blobs):
                await conn.execute(
                    "INSERT INTO memory_vectors(record_id, space, chunk, vector)"
                    " SELECT id, ?, ?, ? FROM memory_records WHERE id = ?",
                    (self.space, chunk, blob, record_id),
                )

    async def has_any(self) -> bool:
        cur = await self.db.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM memory_vectors WHERE space = ? AND vector != x'')",
            (self.space,),
        )
        row = await cur.fetchone()
        return bool(row and row[0])

    async def count(self) -> int:
        cur = await self.db.conn.execute(
            "SELECT count(DISTINCT record_id) FROM memory_vectors"
            " WHERE space = ? AND vector != x''",
            (self.space,),
        )
        row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def search(
        self, query: Sequence[float], limit: int, exclude: Collection[int] = ()
    ) -> list[tuple[int, float]]:
        """(record id, cosine) of the `limit` records nearest the query, nearest first."""
        if limit <= 0:
            return []
        await self._refresh()
        q = tuple(normalized(query))
        if not self._cache or len(q) != self._dim:
            return []
        best: dict[int, float] = {}
        newest: Collection[int] = self._cache
        if len(self._cache) > self.max_scanned:
            newest = heapq.nlargest(self.max_scanned, self._cache)
        dist = math.dist
        for rowid in newest:
            record_id, vector = self._cache[rowid]
            if record_id in exclude:
                continue
            cosine = 1.0 - dist(vector, q) ** 2 / 2.0
            if cosine > best.get(record_id, -2.0):
                best[record_id] = cosine
        nearest = heapq.nlargest(limit, best.items(), key=lambda item: (item[1], item[0]))
        return [(record_id, cosine) for record_id, cosine in nearest]

    async def _refresh(self) -> None:
        """Load vectors stored since the last search; forget deleted ones."""
        cur = await self.db.conn.execute(
            "SELECT rowid, record_id, vector FROM memory_vectors"
            " WHERE space = ? AND rowid > ? AND vector != x'' ORDER BY rowid",
            (self.space, self._seen_rowid),
        )
        for rowid, record_id, blob in await cur.fetchall():
            vector = unpack(blob)
            if self._dim is None:
                self._dim = len(vector)
            if len(vector) == self._dim:
                self._cache[rowid] = (record_id, vector)
            else:
                self._skipped += 1
            self._seen_rowid = rowid
        if self._cache:
            # Deleted records take their vectors along (ON DELETE CASCADE);
            # a cheap count tells whether the cache still matches.
            cur = await self.db.conn.execute(
                "SELECT count(*) FROM memory_vectors WHERE space = ? AND vector != x''"
                " AND rowid <= ?",
                (self.space, self._seen_rowid),
            )
            row = await cur.fetchone()
            if row is not None and row[0] != len(self._cache) + self._skipped:
                self._cache.clear()
                self._seen_rowid = self._skipped = 0
                self._dim = None
                await self._refresh()
