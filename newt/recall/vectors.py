"""Record vectors in the same SQLite file (table `memory_vectors`, migration m006),
and nearest-neighbour search over them in plain Python.

A record is embedded in chunks (see embedder.chunks); each chunk's vector is
L2-normalized and stored as a float32 blob, so cosine similarity is a dot
product. A record's similarity to a query is that of its best chunk. A record
that could not be embedded at all gets one row with an empty blob, so the
background queue does not offer it again.

Search is brute force, with no extension and no numpy: the newest
MAX_SCANNED vectors of one space are held in memory quantized to 8-bit
integers (see `quantized`), and `math.dist` (a C loop) gives the distance
from which the cosine follows. benchmarks/vector_search.py measures it;
sqlite-vec's brute force is a few times faster but cannot be loaded here
(this Python's sqlite3 is built without extension loading, as some
distributions' and macOS's are), and a conversation store holds a few
thousand chunks. Past MAX_SCANNED only the newest are searched, as the
lexical path bounds its bm25 work.
"""

from __future__ import annotations

import array
import asyncio
import heapq
import math
import sys
from collections.abc import Collection, Sequence

from newt.store.db import Database

# The newest chunks searched per query (see benchmarks/vector_search.py).
MAX_SCANNED = 4000
# Vectors quantized between two yields to the event loop while loading.
LOAD_SLICE = 250


def normalized(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(math.fsum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0 else [0.0 for _ in vector]


def pack(vector: Sequence[float]) -> bytes:
    """Little-endian float32 bytes of the unit vector."""
    values = array.array("f", normalized(vector))
    if sys.byteorder != "little":
        values.byteswap()
    return values.tobytes()


def quantized(vector: Sequence[float]) -> tuple[tuple[int, ...], float]:
    """The vector scaled to integers in [-127, 127] and shifted by +128, and the
    norm of the unshifted integers (0 for a zero vector).

    Python caches the ints 0..256, so such a tuple costs a pointer per
    dimension (a float tuple costs four times that), and math.dist runs on
    it slightly faster. Scaling each vector on its own keeps its direction,
    which is all cosine similarity looks at.
    """
    top = max((abs(x) for x in vector), default=0.0)
    if not top:
        return tuple(128 for _ in vector), 0.0
    ints = [round(x * 127.0 / top) for x in vector]
    return tuple(i + 128 for i in ints), math.sqrt(sum(i * i for i in ints))


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
        # rowid of memory_vectors -> (record id, quantized vector, its norm), in
        # rowid order; None for a row that cannot be compared.
        self._cache: dict[int, tuple[int, tuple[int, ...], float] | None] = {}
        self._seen_rowid = 0
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
        if len(query) != self._dim:
            return []
        q, q_norm = quantized(query)
        if not q_norm:
            return []
        best: dict[int, float] = {}
        dist = math.dist
        for entry in self._cache.values():
            if entry is None or entry[0] in exclude:
                continue
            record_id, vector, norm = entry
            # a.b = (|a|^2 + |b|^2 - |a - b|^2) / 2; the +128 offset cancels in a - b.
            dot = (norm * norm + q_norm * q_norm - dist(vector, q) ** 2) / 2.0
            cosine = dot / (norm * q_norm)
            if cosine > best.get(record_id, -2.0):
                best[record_id] = cosine
        nearest = heapq.nlargest(limit, best.items(), key=lambda item: (item[1], item[0]))
        return [(record_id, cosine) for record_id, cosine in nearest]

    async def _refresh(self) -> None:
        """Hold the newest `max_scanned` vectors of the space: load those stored
        since the last search, drop the oldest, and start over when some held
        one was deleted (its record went, or got new content)."""
        cur = await self.db.conn.execute(
            "SELECT rowid, record_id, vector FROM memory_vectors"
            " WHERE space = ? AND rowid > ? AND vector != x'' ORDER BY rowid DESC LIMIT ?",
            (self.space, self._seen_rowid, self.max_scanned),
        )
        rows = list(await cur.fetchall())
        if len(rows) == self.max_scanned:
            self._cache.clear()  # all new: nothing older stays within the window
        for n, (rowid, record_id, blob) in enumerate(reversed(rows), start=1):
            if n % LOAD_SLICE == 0:
                await asyncio.sleep(0)  # a first load takes a while: let the UI breathe
            vector = unpack(blob)
            if self._dim is None:
                self._dim = len(vector)
            if len(vector) != self._dim:
                self._cache[rowid] = None  # another model under the same name: skip
                continue
            ints, norm = quantized(vector)
            self._cache[rowid] = (record_id, ints, norm) if norm else None
        if rows:
            self._seen_rowid = rows[0][0]
        while len(self._cache) > self.max_scanned:
            del self._cache[next(iter(self._cache))]  # insertion order is rowid order
        if not self._cache:
            return
        # A cheap count over the held window tells whether any row in it went.
        cur = await self.db.conn.execute(
            "SELECT count(*) FROM memory_vectors WHERE space = ? AND vector != x''"
            " AND rowid BETWEEN ? AND ?",
            (self.space, next(iter(self._cache)), self._seen_rowid),
        )
        row = await cur.fetchone()
        if row is not None and row[0] != len(self._cache):
            self._cache.clear()
            self._seen_rowid = 0
            self._dim = None
            await self._refresh()
