"""What makes recall by meaning fast changes nothing it returns: the query is
embedded while the words are ranked, what the best lexical hits need is read
meanwhile, a common word's newer statement is looked for among the newest
records first, and the vector scan is split between threads."""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from newt.recall import RecallEngine, RecallRequest, RecallResponse, vectors
from newt.recall.eight_bit import rounded
from newt.recall.vectors import VectorIndex
from newt.store import Store

WORDS = [
    "harbor",
    "locker",
    "code",
    "ferry",
    "pier",
    "kitchen",
    "garden",
    "budget",
    "server",
    "port",
    "invoice",
    "bridge",
    "trail",
    "cluster",
    "window",
    "mirror",
    "report",
    "meeting",
    "schedule",
    "ticket",
    "flight",
    "hotel",
    "train",
]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "newt.db") as opened:
        yield opened


def _vector(text: str, dim: int = 16) -> list[float]:
    """A fixed pseudo-random direction per text (the same text, the same vector)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dim).tolist()


class SlowEmbedder:
    """Vectors from _vector; a query waits for `release` when there is one."""

    space = "test-space"

    def __init__(self) -> None:
        self.available: bool | None = True
        self.started = asyncio.Event()
        self.release: asyncio.Event | None = None

    async def embed(self, texts: Sequence[str]) -> list[list[float]] | None:
        return [_vector(t) for t in texts]

    async def embed_query(self, text: str) -> list[float] | None:
        self.started.set()
        if self.release is not None:
            await asyncio.wait_for(self.release.wait(), 10)
        return _vector(text)

    async def aclose(self) -> None:
        pass


async def _chat(store: Store, turns: int, seed: int = 5) -> None:
    """`turns` turns in a few conversations, every record with its vector."""
    rng = random.Random(seed)
    index = VectorIndex(store.db, SlowEmbedder.space)
    convs = [await store.conversations.create() for _ in range(4)]
    for n in range(turns):
        store.db.clock = lambda n=n: 1_000_000.0 + 60 * n
        user = " ".join(rng.sample(WORDS, 4)) + f" number {n}."
        reply = " ".join(rng.sample(WORDS, 6)) + "."
        turn_id = await store.turns.add_pending(convs[n % 4].id, user)
        await store.turns.complete(turn_id, reply)
        for key, text in ((f"t{turn_id}", user), (f"r{turn_id}", reply)):
            record = await store.records.get(key)
            assert record is not None
            await index.store(record.id, [_vector(text)])


def _seen(response: RecallResponse) -> tuple[list[str], list[float], list[str]]:
    return (
        [m.key for m in response.memories],
        [round(m.score, 9) for m in response.memories],
        response.terms,
    )


async def test_the_query_is_embedded_while_the_words_are_ranked(store: Store) -> None:
    await _chat(store, 20)
    embedder = SlowEmbedder()
    embedder.release = asyncio.Event()
    engine = RecallEngine(store, embedder=embedder)
    real = engine._lexical

    async def lexical(*args: Any) -> Any:
        # Sequential, the embedding would only start after this returns.
        await asyncio.wait_for(embedder.started.wait(), 5)
        try:
            return await real(*args)
        finally:
            assert embedder.release is not None
            embedder.release.set()

    engine._lexical = lexical  # type: ignore[method-assign]
    response = await engine.recall(RecallRequest("harbor locker code", limit=8))
    assert len(response.memories) == 8


async def test_reading_ahead_while_the_query_is_embedded_changes_nothing(store: Store) -> None:
    await _chat(store, 60)
    embedder = SlowEmbedder()
    engine = RecallEngine(store, embedder=embedder)
    read_ahead = engine._read_ahead
    calls: list[int] = []

    async def counted(*args: Any) -> None:
        calls.append(1)
        await read_ahead(*args)
        assert embedder.release is not None
        embedder.release.set()  # the query's vector comes after what was read ahead

    async def skipped(*args: Any) -> None:
        calls.append(0)
        assert embedder.release is not None
        embedder.release.set()

    for query in ("harbor locker code", "the kitchen budget meeting", "ferry pier number 7"):
        for limit in (4, 16):
            request = RecallRequest(query, limit=limit)
            engine._read_ahead = counted  # type: ignore[method-assign]
            embedder.release = asyncio.Event()
            ahead = await engine.recall(request)
            embedder.release = asyncio.Event()
            engine._read_ahead = skipped  # type: ignore[method-assign]
            plain = await engine.recall(request)
            assert _seen(ahead) == _seen(plain)
            assert [m.access_count for m in plain.memories] == [
                m.access_count + 1 for m in ahead.memories
            ]
    assert calls == [1, 0] * 6


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_the_split_scan_scores_every_row_as_one_thread_does(
    threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(3)
    rows = 2637
    matrix = rng.integers(-127, 128, (rows + 40, 384), dtype=np.int8)  # spare rows unread
    scales = rng.random(rows + 40).astype(np.float32)
    q = rng.standard_normal(384).astype(np.float32)
    monkeypatch.setattr(vectors, "SCAN_THREADS", 1)
    alone = vectors._scores(matrix, scales, rows, q)
    monkeypatch.setattr(vectors, "SCAN_THREADS", threads)
    monkeypatch.setattr(vectors, "SPLIT_ROWS", 1000)
    split = vectors._scores(matrix, scales, rows, q)
    assert split.shape == (rows,)
    assert np.array_equal(split, alone)
    codes, scale = rounded(q[None, :])  # the query rounded to 8 bits too
    exact = (matrix[:rows].astype(np.float64) @ codes[0]) * scales[:rows] * scale[0]
    assert np.allclose(alone, exact, rtol=1e-6, atol=1e-6)
