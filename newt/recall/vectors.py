"""Record vectors in the same SQLite file (table `memory_vectors`, migration m006),
and exact nearest-neighbour search over all of them.

A record is embedded in chunks (see pieces.record_pieces); each chunk's vector is
L2-normalized and stored as a float32 blob, so cosine similarity is a dot
product. A record's similarity to a query is that of its best chunk. A record
that could not be embedded at all gets one row with an empty blob, so the
background queue does not offer it again.

Search reads every vector of the space: they are held in memory as one matrix
of 8-bit integers with a scale per row (384 bytes per 384-dimension chunk, a
quarter of float32), loaded once and then extended by the rows stored since
the last search. The query is rounded to 8 bits too, and one pass of integer
dot products (numkong's SIMD kernels, split between SCAN_THREADS threads, the
GIL let go) gives every row an approximate cosine and a bound on its error:
the norm of what the rounding left of the row, and of the query (Cauchy-Schwarz).
The rows whose bound reaches the `limit`-th record's lower bound are read back
from the database and scored exactly, so the records returned, their cosines
and their order are those of exact brute force (benchmarks/vector_search.py
measures it). Rows deleted since they were loaded (a record removed, or
re-embedded after its content changed) are caught there too: any that went
are dropped and the search runs again.
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

from newt.recall.eight_bit import rounded
from newt.recall.offload import off_loop
from newt.store.db import Database

# Rows read per statement while loading; the event loop runs between two.
LOAD_PAGE = 4096
# Rows ranked per requested record on the first try when finding the
# `limit`-th record's lower bound (a record has several chunks, and excluded
# records take places too); widened until enough records are found.
CANDIDATES_PER_RECORD = 4
# Dead rows tolerated (as a share of those held) before the matrix is compacted.
DEAD_SHARE = 0.25
# Threads a scan is split between (each takes at least SPLIT_ROWS rows).
SCAN_THREADS = min(2, os.cpu_count() or 1)
SPLIT_ROWS = 32_768
# Added to every row's error bound: float32 rounding of the approximate and
# of the exact cosine (a 384-term float32 dot product is off by 2e-5 at most).
ROUNDING = 1e-4


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
        # What the 8-bit rounding left of each row, as a norm (its error bound).
        self._residuals: NDArray[np.float32] = np.zeros(0, dtype=np.float32)
        self._longest = 0.0  # the largest norm of a held row (1.0 give or take)
        self._records: NDArray[np.int64] = np.zeros(0, dtype=np.int64)  # -1: dead
        self._rowids: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._seen_rowid = 0
        self._any = False  # a vector was seen (has_any)
        self._lock = asyncio.Lock()

    async def pending(self, limit: int) -> list[tuple[int, str, str | None]]:
        """(record id, content, role) of records with no vector in this space, newest first."""
        cur = await self.db.conn.execute(
            "SELECT r.id, r.content, r.role FROM memory_records r WHERE NOT EXISTS ("
            " SELECT 1 FROM memory_vectors v WHERE v.record_id = r.id AND v.space = ?)"
            " ORDER BY r.id DESC LIMIT ?",
            (self.space, limit),
        )
        return [(row[0], row[1], row[2]) for row in await cur.fetchall()]

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

    async def drop_space(self, space: str) -> None:
        """Delete every vector of another `space` (one this store no longer searches)."""
        if space != self.space:
            async with self.db.transaction() as conn:
                await conn.execute("DELETE FROM memory_vectors WHERE space = ?", (space,))

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
        return int(self._matrix.nbytes + rows * (4 + 4 + 8 + 8))

    async def search(
        self, query: Sequence[float], limit: int, exclude: Collection[int] = ()
    ) -> list[tuple[int, float]]:
        """(record id, cosine) of the `limit` records nearest the query, nearest
        first (ties: the newer record first); every stored vector is compared,
        and the result is exact brute force's."""
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
            low, high = await off_loop(
                _bounds, self._matrix, self._scales, self._residuals, self._longest, self._n, q
            )
            while True:
                rows = self._candidates(low, high, limit, exclude)
                exact, gone = await self._exact(rows, q)
                if not gone:
                    break
                self._records[gone] = -1  # dropped rows never come back
                self._dead += len(gone)
            records = self._records[rows].tolist()
            if self._dead > DEAD_SHARE * self._n:
                self._compact()
        best: dict[int, float] = {}
        for row, record_id in zip(rows.tolist(), records, strict=True):
            score = exact[row]
            if record_id not in best or score > best[record_id]:
                best[record_id] = score
        ranked = sorted(best.items(), key=lambda item: (-item[1], -item[0]))
        return ranked[:limit]

    def _candidates(
        self,
        low: NDArray[np.float32],
        high: NDArray[np.float32],
        limit: int,
        exclude: Collection[int],
    ) -> NDArray[np.intp]:
        """The rows that may be the best chunk of one of the `limit` nearest
        records (not dead, not excluded), given each row's bounds on its cosine.

        The `limit`-th best lower bound among distinct records, `floor`, is at
        most the `limit`-th best exact score; a row whose upper bound is below
        it, or below another chunk's lower bound of its own record, cannot be
        a returned record's best chunk."""
        n = len(low)
        records = self._records[:n]
        want = min(n, (limit + len(exclude)) * CANDIDATES_PER_RECORD + 16)
        floor = -math.inf
        while True:
            top = np.argpartition(low, n - want)[n - want :] if want < n else np.arange(n)
            order = top[np.argsort(-low[top], kind="stable")]
            seen: set[int] = set()
            for row, record_id in zip(order.tolist(), records[order].tolist(), strict=True):
                if record_id < 0 or record_id in seen or record_id in exclude:
                    continue
                seen.add(record_id)
                if len(seen) == limit:
                    floor = float(low[row])
                    break
            if len(seen) >= limit or want == n:
                break
            want = min(n, want * 4)
        rows = np.flatnonzero(high >= floor) if floor > -math.inf else np.arange(n)
        owners = records[rows]
        keep = owners >= 0
        if exclude:
            keep &= ~np.isin(owners, np.fromiter(exclude, dtype=np.int64, count=len(exclude)))
        rows, owners = rows[keep], owners[keep]
        # Within a record, only chunks that may beat its best lower bound.
        ids, which = np.unique(owners, return_inverse=True)
        best_low = np.full(len(ids), -np.inf, dtype=np.float32)
        np.maximum.at(best_low, which, low[rows])
        return rows[high[rows] >= best_low[which]]

    async def _exact(
        self, rows: NDArray[np.intp], q: NDArray[np.float32]
    ) -> tuple[dict[int, float], list[int]]:
        """The exact cosine of each held row still in the database, read back
        from it, and the rows whose database row no longer exists."""
        if not len(rows):
            return {}, []
        rowids = self._rowids[rows].tolist()
        marks = ",".join("?" * len(rowids))
        found = await self.db.conn.execute_fetchall(
            f"SELECT rowid, vector FROM memory_vectors WHERE rowid IN ({marks})", rowids
        )
        blobs = {row[0]: row[1] for row in found}
        exact: dict[int, float] = {}
        gone: list[int] = []
        for row, rowid in zip(rows.tolist(), rowids, strict=True):
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
            self._residuals = np.resize(self._residuals, capacity)
            self._records = np.resize(self._records, capacity)
            self._rowids = np.resize(self._rowids, capacity)
        codes, scales = rounded(vectors)
        left = vectors - codes * scales[:, None]
        self._matrix[self._n : need] = codes
        self._scales[self._n : need] = scales
        self._residuals[self._n : need] = np.linalg.norm(left, axis=1)
        self._longest = max(self._longest, float(np.linalg.norm(vectors, axis=1).max()))
        self._records[self._n : need] = records
        self._rowids[self._n : need] = rowids
        self._n = need

    def _compact(self) -> None:
        keep = np.flatnonzero(self._records[: self._n] >= 0)
        self._matrix = np.ascontiguousarray(self._matrix[keep])
        self._scales = self._scales[keep]
        self._residuals = self._residuals[keep]
        self._records = self._records[keep]
        self._rowids = self._rowids[keep]
        self._n = len(keep)
        self._dead = 0


def _bounds(
    matrix: NDArray[np.int8],
    scales: NDArray[np.float32],
    residuals: NDArray[np.float32],
    longest: float,
    n: int,
    q: NDArray[np.float32],
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """Lower and upper bounds on the cosine of each of the first `n` rows with
    the unit query `q`. Row x = s c + r (c its codes, r what rounding left) and
    q = t u + p; s t (c . u) is off from x . q by x . p + r . (q - p), at most
    |x| |p| + |r| (1 + |p|)."""
    codes, scale = rounded(q[None, :])
    left = float(np.linalg.norm(q - codes[0] * scale[0]))
    approx = _scores(matrix, scales, n, q)
    slack = residuals[:n] * np.float32(1.0 + left)
    slack += np.float32(longest * left + ROUNDING)
    return approx - slack, approx + slack


def _scores(
    matrix: NDArray[np.int8], scales: NDArray[np.float32], n: int, q: NDArray[np.float32]
) -> NDArray[np.float32]:
    """Approximate cosines of the first `n` rows: their 8-bit codes dotted with
    the query's (exact integers), times both scales. Reads only its arguments
    (the index may swap its arrays meanwhile). A large matrix is split between
    SCAN_THREADS threads."""
    codes, scale = rounded(q[None, :])
    out = np.empty(n, dtype=np.float32)
    parts = max(1, min(SCAN_THREADS, n // SPLIT_ROWS))
    bounds = [n * i // parts for i in range(parts + 1)]
    helpers = [
        threading.Thread(
            target=_scan, args=(matrix, codes, out, bounds[i], bounds[i + 1]), daemon=True
        )
        for i in range(1, parts)
    ]
    for helper in helpers:
        helper.start()
    _scan(matrix, codes, out, bounds[0], bounds[1])
    for helper in helpers:
        helper.join()
    out *= scales[:n]
    out *= scale[0]
    return out


def _scan(
    matrix: NDArray[np.int8], codes: NDArray[np.int8], out: NDArray[np.float32], lo: int, hi: int
) -> None:
    """out[lo:hi] = matrix[lo:hi] . codes[0], in one call to numkong's int8 dot
    product kernels (AVX-512 VNNI, AVX2, NEON...), which reads each row once
    and lets go of the GIL. The sums (at most 384 * 127 * 127) are exact in
    float32."""
    import numkong

    if hi > lo:
        numkong.cdist(codes, matrix[lo:hi], metric="dot", out=out[lo:hi].reshape(1, -1))
