"""Meaning-based recall's search cost: VectorIndex.search over every stored vector.

    .venv/bin/python benchmarks/vector_search.py [--dim 384] [--sizes 10000,100000] [--chunks 1]

Random unit vectors (384 dimensions: all-MiniLM-L6-v2's, which recall embeds
with in process) stored in a real newt database through its memory_vectors
table, `--chunks` per record, then the median of 50 searches for the 16 nearest
records (the engine asks for twice its limit of 8). The first search of a
process loads the vectors into memory (reported apart), and the memory they
take is reported in MB. Every vector is compared on every search.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as newt/recall/vectors.py runs it
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from newt.recall.vectors import VectorIndex
from newt.store import Store


async def measure(
    records: int, chunks: int, dim: int, rng: np.random.Generator
) -> tuple[float, float, float]:
    """(first search incl. loading, median search, MB held), in ms and MB."""
    with tempfile.TemporaryDirectory() as tmp:
        async with await Store.open(Path(tmp) / "newt.db") as store:
            async with store.db.transaction() as conn:
                await conn.executemany(
                    "INSERT INTO memory_records(id, key, source, content, created_at)"
                    " VALUES (?, ?, 'note', 'x', 0)",
                    [(i, f"n{i}") for i in range(1, records + 1)],
                )
                for chunk in range(chunks):
                    vectors = rng.standard_normal((records, dim), dtype=np.float32)
                    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                    await conn.executemany(
                        "INSERT INTO memory_vectors(record_id, space, chunk, vector)"
                        " VALUES (?, 's', ?, ?)",
                        [
                            (i + 1, chunk, vectors[i].astype("<f4").tobytes())
                            for i in range(records)
                        ],
                    )
            index = VectorIndex(store.db, "s")
            started = time.perf_counter()
            await index.search(rng.standard_normal(dim).tolist(), 16)
            first = (time.perf_counter() - started) * 1000
            timings = []
            for _ in range(50):
                query = rng.standard_normal(dim).tolist()
                started = time.perf_counter()
                await index.search(query, 16)
                timings.append((time.perf_counter() - started) * 1000)
            held_mb = index.held_bytes / 1e6
    return first, statistics.median(timings), held_mb


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--sizes", default="10000,100000", help="records, comma-separated")
    parser.add_argument("--chunks", type=int, default=1, help="vectors per record")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(7)
    print(f"VectorIndex.search, {args.dim} dimensions, {args.chunks} chunk(s) per record,")
    print("16 nearest records, every vector compared")
    print(f"{'records':>8} {'vectors':>8} {'first (load)':>13} {'median':>9} {'matrix':>8}")
    for size in (int(s) for s in args.sizes.split(",")):
        first, median, mb = asyncio.run(measure(size, args.chunks, args.dim, rng))
        print(
            f"{size:>8,} {size * args.chunks:>8,} {first:>10.1f} ms {median:>6.2f} ms {mb:>5.0f} MB"
        )


if __name__ == "__main__":
    main()
