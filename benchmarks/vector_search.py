"""Meaning-based recall's search cost: VectorIndex.search over stored vectors.

    python benchmarks/vector_search.py [--dim 576] [--sizes 1000,4000,10000]

Random unit vectors (576 dimensions: SmolLM2-135M's hidden size, which
llama-server --embeddings --pooling mean returns) stored in a real newt
database through VectorIndex, then the median of 30 searches for the 16
nearest. The first search of a process loads the vectors into memory
(reported apart). Searches scan at most vectors.MAX_SCANNED chunks.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from newt.recall.vectors import MAX_SCANNED, VectorIndex, pack
from newt.store import Store


async def measure(size: int, dim: int, rng: random.Random) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        async with await Store.open(Path(tmp) / "newt.db") as store:
            async with store.db.transaction() as conn:
                await conn.executemany(
                    "INSERT INTO memory_records(id, key, source, content, created_at)"
                    " VALUES (?, ?, 'note', 'x', 0)",
                    [(i, f"n{i}") for i in range(1, size + 1)],
                )
                await conn.executemany(
                    "INSERT INTO memory_vectors(record_id, space, chunk, vector)"
                    " VALUES (?, 's', 0, ?)",
                    [(i, pack([rng.gauss(0, 1) for _ in range(dim)])) for i in range(1, size + 1)],
                )
            index = VectorIndex(store.db, "s")
            query = [rng.gauss(0, 1) for _ in range(dim)]
            started = time.perf_counter()
            await index.search(query, 16)
            first = (time.perf_counter() - started) * 1000
            timings = []
            for _ in range(30):
                query = [rng.gauss(0, 1) for _ in range(dim)]
                started = time.perf_counter()
                await index.search(query, 16)
                timings.append((time.perf_counter() - started) * 1000)
    return first, statistics.median(timings)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=576)
    parser.add_argument("--sizes", default="1000,4000,10000")
    args = parser.parse_args(argv)
    rng = random.Random(7)
    print(f"VectorIndex.search, {args.dim} dimensions, 16 nearest (scans <= {MAX_SCANNED:,})")
    print(f"{'vectors':>8} {'first (load)':>13} {'median':>9}")
    for size in (int(s) for s in args.sizes.split(",")):
        first, median = asyncio.run(measure(size, args.dim, rng))
        print(f"{size:>8,} {first:>10.1f} ms {median:>6.1f} ms")


if __name__ == "__main__":
    main()
