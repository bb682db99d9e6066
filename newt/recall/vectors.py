"""Record vectors in the same SQLite file (table `memory_vectors`, migration m006),
and exact nearest-neighbour search over all of them with numpy.

A record is embedded in chunks (see embedder.chunks); each chunk's vector is
L2-normalized and stored as a float32 blob, so cosine similarity is a dot
product. A record's similarity to a query is that of its best chunk. A record
that could not be embedded at all gets one row with an empty blob, so the
background queue does not offer it again.

Search reads every vector of the space: they are held in memory as one matrix
of 8-bit integers with a scale per row (384 bytes per 384-dimension chunk, a
quarter of float32; cosines within about 0.01), loaded once and then extended
by the rows stored since the last search. A query costs one matrix-vector
product (in float32, a block of rows at a time: the scan reads a quarter of the
bytes, which is what bounds it) and an argpartition; the few rows it picks are
then read back from the database and scored exactly, so the cosines returned
and their order are exact (benchmarks/vector_search.py measures it). Rows
deleted since they were loaded (a record removed, or re-embedded after its
content changed) are caught there too: any that went are dropped and the
search runs again.
"""

from __future__ import annotations

import array
import asyncio
import math
import os
import sys
import threading
from collections.abc import Collection, Sequence

# One BLAS thread for newt's numpy work (this search, recall/minilm.py): its
# matrices are small, and OpenBLAS's spinning threads slow everything down when a
# local chat model holds the cores. Set before numpy loads; a value set by the
# user wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from numpy.typing import NDArray

from newt.recall.threads import off_loop
from newt.store.db import Database

# Rows read per statement while loading; the event loop runs between two.
LOAD_PAGE = 4096
# Chunks ranked per requested record on the first try (a record has several,
# and excluded records take places too); widened until enough records are found.
CANDIDATES_PER_RECORD = 4
# Dead rows tolerated (as a share of those held) before the matrix is compacted.
DEAD_SHARE = 0.25
# Rows converted to float32 and multiplied at a time: 768 KB, so the block is
# still in the core's L2 cache when the product reads it back (4,096-row blocks,
# 6 MB, made the whole scan take twice as long).
BLOCK_ROWS = 512
# Threads a scan is split between (each takes at least SPLIT_ROWS rows).
SCAN_THREADS = min(2, os.cpu_count() or 1)
SPLIT_ROWS = 32_768


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
    return tuple(float(x) for x in np.frombuffer(blob, dtype="<f4"))


class VectorIndex:
    """Stored vectors of one embedding space, and search over them."""

    def __init__(self, db: Database, space: str) -> None:
        self.db = db
        self.space = space
        self._dim: int | None = None
        self._n = 0  # rows held
        self._dead = 0  # rows held whose database row is gone
        self._matrix: NDArray[np.int8] = np.zeros((0, 0), dtype=np.int8)
        self._scales: NDArray[np.float32] = np.zeros(0, dtype=np.float32)
        self._records: NDArray[np.int64] = np.zeros(0, dtype=np.int64)  # -1: dead
        self._rowids: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._seen_rowid = 0
        self._any = False  # a vector was seen (has_any)
        self._lock = asyncio.Lock()

    async def pending(self, limit: int) -> list[tuple[int, str]]:
        """(record id, content) of records with no vector in this space, newest first."""
        cur = await self.db.conn.execute(
            "SELECT r.id, r.content FROM memory_records r WHERE NOT EXISTS ("
            " SELECT 1 FROM memory_vectors v WHERE v.record_id = r.id AND v.space = ?)"
            " ORDER BY r.id DESC LIMIT ?",
            (self.space, limit),
        )
        return [(row[0], row[1]) for row in await cur.fetchall()]

    async def store(
        self, record_id: int, vectors: Sequence[Sequence[float]], content: str | None = None
    ) -> None:
        """Replace the record's vectors in this space (none: mark it unembeddable);
        with `content`, only while the record still holds that text."""
        blobs = [pack(v) for v in vectors] or [b""]
        async with self.db.transaction() as conn:
            await conn.execute(
                "DELETE FROM memory_vectors WHERE record_id = ? AND space = ?",
                (record_id, self.space),
            )
            # The record may have been deleted or rewritten meanwhile: insert
            # only if it exists (and still says what was embedded).
            for chunk, blob in enumerate(blobs):
                await conn.execute(
                    "INSERT INTO memory_vectors(record_id, space, chunk, vector)"
                    " SELECT id, ?, ?, ? FROM memory_records WHERE id = ?"
                    " AND (? IS NULL OR content = ?)",
                    (self.space, chunk, blob, record_id, content, content),
                )

    async def has_any(self) -> bool:
        """Whether the space has a vector. Once it has, asked no more: a store
        whose vectors all went just finds nothing, as it would without them."""
        if self._any:
            return True
        cur = await self.db.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM memory_vectors WHERE space = ? AND vector != x'')",
            (self.space,),
        )
        row = await cur.fetchone()
        self._any = bool(row and row[0])
        return self._any

    async def count(self) -> int:
        cur = await self.db.conn.execute(
            "SELECT count(DISTINCT record_id) FROM memory_vectors"
            " WHERE space = ? AND vector != x''",
            (self.space,),
        )
        row = await cur.fetchone()
        return int(row[0]) if row else 0

    @property
    def held(self) -> int:
        """Chunk vectors in memory (dead ones included until compaction)."""
        return self._n

    @property
    def held_bytes(self) -> int:
        """Memory the held vectors take (with their scales, record ids and rowids)."""
        rows = len(self._records)
        return int(self._matrix.nbytes + rows * (4 + 8 + 8))

    async def search(
        self, query: Sequence[float], limit: int, exclude: Collection[int] = ()
    ) -> list[tuple[int, float]]:
        """(record id, cosine) of the `limit` records nearest the query, nearest
        first (ties: the newer record first); every stored vector is compared."""
        if limit <= 0:
            return []
        async with self._lock:
            await self._refresh()
            q = np.asarray(query, dtype=np.float32)
            if self._n == 0 or q.shape != (self._dim,):
                return []
            norm = float(np.linalg.norm(q))
            if not norm or not math.isfinite(norm):
                return []
            q /= norm
            # Off the event loop: aiosqlite's answers (the lexical ranking
            # running beside this search) are delivered meanwhile.
            scores = await off_loop(_scores, self._matrix, self._scales, self._n, q)
            while True:
                found = self._best(scores, limit, exclude)
                exact, gone = await self._exact([row for row, _, _ in found], q)
                if not gone:
                    break
                self._records[gone] = -1  # dropped rows never come back
                self._dead += len(gone)
            if self._dead > DEAD_SHARE * self._n:
                self._compact()
        ranked = sorted(
            ((exact[row], record_id) for row, record_id, _ in found), key=lambda x: (-x[0], -x[1])
        )
        return [(record_id, score) for score, record_id in ranked]

    def _best(
        self, scores: NDArray[np.float32], limit: int, exclude: Collection[int]
    ) -> list[tuple[int, int, float]]:
        """(row, record id, cosine) of the best chunk of each of the `limit` best
        records: the top chunks by argpartition, widened until enough records."""
        n = len(scores)
        want = min(n, (limit + len(exclude)) * CANDIDATES_PER_RECORD + 16)
        while True:
            top = np.argpartition(scores, n - want)[n - want :] if want < n else np.arange(n)
            order = top[np.argsort(-scores[top], kind="stable")]
            best: dict[int, tuple[int, float]] = {}
            records = self._records[order].tolist()
            values = scores[order].tolist()
            for row, record_id, score in zip(order.tolist(), records, values, strict=True):
                if record_id < 0 or record_id in best or record_id in exclude:
                    continue
                best[record_id] = (row, score)
            if len(best) >= limit or want == n:
                break
            want = min(n, want * 4)
        ranked = sorted(best.items(), key=lambda item: (-item[1][1], -item[0]))[:limit]
        return [(row, record_id, score) for record_id, (row, score) in ranked]

    async def _exact(
        self, rows: list[int], q: NDArray[np.float32]
    ) -> tuple[dict[int, float], list[int]]:
        """The exact cosine of each held row still in the database, read back
        from it, and the rows whose database row no longer exists."""
        if not rows:
            return {}, []
        rowids = self._rowids[rows].tolist()
        marks = ",".join("?" * len(rowids))
        found = await self.db.conn.execute_fetchall(
            f"SELECT rowid, vector FROM memory_vectors WHERE rowid IN ({marks})", rowids
        )
        blobs = {row[0]: row[1] for row in found}
        exact: dict[int, float] = {}
        gone: list[int] = []
        for row, rowid in zip(rows, rowids, strict=True):
            if rowid in blobs:
                exact[row] = float(np.frombuffer(blobs[rowid], dtype="<f4") @ q)
            else:
                gone.append(row)
        return exact, gone

    async def _refresh(self) -> None:
        """Append the space's vectors stored since the last search, a page at a
        time (a first load of a large store lets the event loop run between pages)."""
        while True:
            rows = list(
                await self.db.conn.execute_fetchall(
                    "SELECT rowid, record_id, vector FROM memory_vectors"
                    " WHERE space = ? AND rowid > ? AND vector != x'' ORDER BY rowid LIMIT ?",
                    (self.space, self._seen_rowid, LOAD_PAGE),
                )
            )
            if not rows:
                return
            self._seen_rowid = rows[-1][0]
            if self._dim is None:
                self._dim = len(rows[0][2]) // 4
            size = self._dim * 4
            # A vector of another length (another model under the same name) is skipped.
            rows = [row for row in rows if len(row[2]) == size]
            self._append(
                np.frombuffer(b"".join(row[2] for row in rows), dtype="<f4").reshape(-1, self._dim),
                [row[1] for row in rows],
                [row[0] for row in rows],
            )
            if len(rows) < LOAD_PAGE:
                return
            await asyncio.sleep(0)

    def _append(self, vectors: NDArray[np.float32], records: list[int], rowids: list[int]) -> None:
        count = len(records)
        if not count:
            return
        need = self._n + count
        if need > len(self._records):
            capacity = max(need, 2 * len(self._records), 1024)
            matrix = np.zeros((capacity, vectors.shape[1]), dtype=np.int8)
            if self._n:
                matrix[: self._n] = self._matrix[: self._n]
            self._matrix = matrix
            self._scales = np.resize(self._scales, capacity)
            self._records = np.resize(self._records, capacity)
            self._rowids = np.resize(self._rowids, capacity)
        # Each row scaled on its own to [-127, 127]: its direction is all a cosine reads.
        top = np.abs(vectors).max(axis=1)
        scales = np.where(top > 0, top / 127.0, 0.0).astype(np.float32)
        safe = np.where(scales > 0, scales, 1.0)[:, None]
        self._matrix[self._n : need] = np.rint(vectors / safe).astype(np.int8)
        self._scales[self._n : need] = scales
        self._records[self._n : need] = records
        self._rowids[self._n : need] = rowids
        self._n = need

    def _compact(self) -> None:
        keep = np.flatnonzero(self._records[: self._n] >= 0)
        self._matrix = np.ascontiguousarray(self._matrix[keep])
        self._scales = self._scales[keep]
        self._records = self._records[keep]
        self._rowids = self._rowids[keep]
        self._n = len(keep)
        self._dead = 0


def _scores(
    matrix: NDArray[np.int8], scales: NDArray[np.float32], n: int, q: NDArray[np.float32]
) -> NDArray[np.float32]:
    """Approximate cosines of the first `n` rows (the 8-bit rows times their
    scales). Reads only its arguments (the index may swap its arrays
    meanwhile). A large matrix is split between SCAN_THREADS threads."""
    out = np.empty(n, dtype=np.float32)
    parts = max(1, min(SCAN_THREADS, n // SPLIT_ROWS))
    bounds = [n * i // parts // BLOCK_ROWS * BLOCK_ROWS for i in range(parts)] + [n]
    helpers = [
        threading.Thread(target=_scan, args=(matrix, q, out, bounds[i], bounds[i + 1]), daemon=True)
        for i in range(1, parts)
    ]
    for helper in helpers:
        helper.start()
    _scan(matrix, q, out, bounds[0], bounds[1])
    for helper in helpers:
        helper.join()
    out *= scales[:n]
    return out


def _scan(
    matrix: NDArray[np.int8], q: NDArray[np.float32], out: NDArray[np.float32], lo: int, hi: int
) -> None:
    """out[lo:hi] = matrix[lo:hi] @ q, a block of rows at a time copied out
    (a plain memory copy streams the rows in faster than numpy's int8 to
    float32 conversion reads them), converted to float32 and multiplied, all
    in cache. numpy lets go of the GIL in each step."""
    block = np.empty((min(BLOCK_ROWS, hi - lo), len(q)), dtype=np.float32)
    staged = np.empty(block.shape, dtype=np.int8)
    for start in range(lo, hi, BLOCK_ROWS):
        end = min(hi, start + BLOCK_ROWS)
        raw, rows = staged[: end - start], block[: end - start]
        raw[...] = matrix[start:end]
        rows[...] = raw
        np.matmul(rows, q, out=out[start:end])
