"""benchmarks/recall_latency.py measures what it says, on a store small enough
for a test: real records and their vectors as newt embeds them, every question
recalled through the meaning path (embedding and vector search both ran), a
report per kind. No timing is asserted: this machine may be busy."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import numpy as np

from newt.local.setup import embedding_wheel_path
from newt.recall.embedder import LOCAL_SPACE, QUERIES_KEPT, LocalEmbedder
from newt.recall.pieces import record_pieces
from tests.support.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import recall_latency as bench


async def test_the_benchmark_runs_on_a_small_store(tmp_path: Path) -> None:
    wheel = embedding_wheel_path()
    # scripts/test fetches it before the suite runs: a missing wheel is a failure
    assert wheel.is_file(), f"no all-MiniLM-L6-v2 wheel at {wheel}: run scripts/get_llama_server.sh"
    cache = wheel.parent
    model = await LocalEmbedder(cache, fetch=False)._ready()
    assert model is not None
    path, meta = await bench.cached_db(400, 3, 40, 4, model, folder=tmp_path)
    assert path.parent == tmp_path and path.name == bench.cache_stem(400, 3, 40) + ".db"
    assert set(meta["questions"]) == set(bench.KINDS)
    assert all(meta["questions"][kind] for kind in bench.KINDS)

    conn = sqlite3.connect(path)
    try:
        records = conn.execute("SELECT id, content, role FROM memory_records").fetchall()
        vectors = conn.execute(
            "SELECT record_id, chunk, vector FROM memory_vectors WHERE space = ?", (LOCAL_SPACE,)
        ).fetchall()
        turns = conn.execute("SELECT count(*) FROM turns").fetchone()[0]
    finally:
        conn.close()
    assert len(records) == meta["records"] == 400 and turns == 200
    assert {role for _, _, role in records} == {"user", "assistant"}
    # as many vectors as the pieces newt embeds, unit length, no two alike
    pieces = sum(len(record_pieces(text, role)) for _, text, role in records)
    assert len(vectors) == meta["vectors"] == pieces
    matrix = np.stack([np.frombuffer(blob, dtype="<f4") for _, _, blob in vectors])
    assert matrix.shape[1] == 384
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    assert len({blob for _, _, blob in vectors}) == len(vectors)

    timings, first = await bench.measure(path, meta["questions"], cache)
    assert first > 0
    kinds = [k for k in bench.KINDS for _ in meta["questions"][k]]
    assert [t.kind for t in timings] == kinds + [bench.AGAIN_KIND] * min(bench.AGAIN, len(kinds))
    for timing in timings:
        # related records only, as many as the budget packs (a question of
        # common words alone may be related to nothing)
        assert timing.memories <= bench.LIMIT
        assert timing.memories > 0 or timing.kind != "fact questions"
        assert timing.parts["embed"] > 0 and timing.parts["search"] > 0
        assert timing.parts["lexical"] > 0 and timing.parts["rest"] > -0.01
        assert timing.total >= max(timing.parts.values())
    lines = bench.report(timings)
    assert [line.split("  ")[0] for line in lines[1:]] == [*bench.KINDS, "all", bench.AGAIN_KIND]
    assert lines[-2].split()[1] == str(len(kinds))  # "all" leaves the repeats out

    # a second call finds the cache instead of building again
    again, _ = await bench.cached_db(400, 3, 40, 4, model, folder=tmp_path)
    assert again == path


async def test_a_query_asked_again_is_not_embedded_again() -> None:
    wheel = embedding_wheel_path()
    # scripts/test fetches it before the suite runs: a missing wheel is a failure
    assert wheel.is_file(), f"no all-MiniLM-L6-v2 wheel at {wheel}: run scripts/get_llama_server.sh"
    embedder = LocalEmbedder(wheel.parent, fetch=False)
    model = await embedder._ready()
    assert model is not None
    embedded: list[str] = []
    real = model.embed_query

    def counting(text: str) -> np.ndarray:
        embedded.append(text)
        return real(text)

    first = await embedder.embed_query("Where do I board the plane to Portugal?")
    model.embed_query = counting  # type: ignore[method-assign]
    try:
        assert await embedder.embed_query("Where do I board the plane to Portugal?") == first
        assert embedded == []
        for n in range(QUERIES_KEPT):  # the oldest query drops out
            await embedder.embed_query(f"question number {n}")
        assert len(embedded) == QUERIES_KEPT
        assert await embedder.embed_query("Where do I board the plane to Portugal?") == first
        assert len(embedded) == QUERIES_KEPT + 1
    finally:
        del model.embed_query
