"""The whole meaning path's latency: RecallEngine.recall with MiniLM in process.

    .venv/bin/python benchmarks/recall_latency.py [--records 100000] [--seed 7] [--rounds 1]
        [--scan-threads N]

A real newt database of `--records` chat-like records (a user message and its
reply per turn, 25 turns per conversation, one turn in 50 telling a fact about
an invented entity; the sentences come from benchmarks/evidence_corpus.py's
templates) with their all-MiniLM-L6-v2 vectors in the in-process embedder's
space, in the pieces newt embeds (recall/pieces.record_pieces: sentences packed
to 200 characters, and a user's clauses about themselves), so the search
compares as many vectors as a store of these records would hold. The
vectors are synthesized cheaply: the records are built from a pool of a few
thousand distinct filler sentences plus each fact sentence, every one of those
(and every distinct clause piece) is embedded for real, and a piece's vector is
the normalized sum of its sentences' vectors plus a small random perturbation
(cosine about 0.99 to the sum), so no two pieces are identical. The database
is built once and cached under /tmp/newt-bench keyed by size, seed and pool;
recall's hit counting updates access counts in the cache, which only shifts
recoverability.

Then each question is recalled the way the agent recalls it:
`RecallEngine.recall(RecallRequest(question, limit=64, retained_token_budget=768))`
with LocalEmbedder (the wheel in ~/.cache/newt-llama; fetched if missing) over
fact questions (paraphrases of stored facts), questions of common words only
and long pasted messages ending in a question. Reported per kind and overall:
the median and p90 of the whole call, and the medians of its parts: the query
embedding (`embed_query`), the vector search (`VectorIndex.search`), the lexical
ranking (`RecallEngine._lexical`) and the rest (the time covered by none of
them: fusing, loading rows, neighbours and newer statements, hit counting,
packing capsules). The parts may overlap, so they need not add up. Then the
last 8 questions are asked again, as a regenerated reply asks (LocalEmbedder
keeps the last queries' vectors), reported apart. One BLAS
thread, as newt runs numpy (OPENBLAS_NUM_THREADS=1); the vector scan splits
itself between threads as newt does (`--scan-threads N` to choose).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as newt/recall/vectors.py runs it
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.evidence_corpus import (
    FACTS,
    _entity,
    _filler,
    _slots,
    long_message,
    vague_question,
)
from newt.recall import RecallEngine, RecallRequest, vectors
from newt.recall.embedder import _SENTENCE_END, LOCAL_SPACE, LocalEmbedder
from newt.recall.minilm import MiniLM
from newt.recall.pieces import record_pieces
from newt.store import SCHEMA_VERSION, Store

LIMIT = 64
BUDGET = 768
NOW = 1_750_000_000.0
CACHE_DIR = Path(tempfile.gettempdir()) / "newt-bench"
# Bump when the generated records or vectors change, to invalidate caches.
CORPUS_VERSION = 2
TURNS_PER_CONVERSATION = 25
FACT_EVERY = 50  # turns
SPREAD_HOURS = 24 * 120
# Perturbation of a chunk's vector, as a norm against the unit sum (cosine ~0.99).
JITTER = 0.15
KINDS = ("fact questions", "common words only", "long pasted message")
# The last questions asked again right after (their vectors are kept), reported
# apart and left out of "all".
AGAIN = 8
AGAIN_KIND = "the last 8 asked again"


@dataclass
class Corpus:
    """Rows to insert, and the questions to ask of them."""

    turns: list[tuple[int, str, str, str, float]] = field(default_factory=list)
    records: list[tuple[int, str, str, int, str, str, float]] = field(default_factory=list)
    # Each record's pieces as lists of sentence numbers (into `sentences`).
    record_chunks: list[tuple[int, list[list[int]]]] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    questions: dict[str, list[str]] = field(default_factory=dict)


def make_corpus(records: int, seed: int, pool: int, questions: int) -> Corpus:
    """`records` records (two per turn) built from `pool` filler sentences and
    one fact sentence per FACT_EVERY turns, and the questions for them."""
    rng = random.Random(seed)
    corpus = Corpus()
    number: dict[str, int] = {}

    def sentence_id(text: str) -> int:
        if text not in number:
            number[text] = len(corpus.sentences)
            corpus.sentences.append(text)
        return number[text]

    fillers = sorted({_filler(rng) for _ in range(pool * 2)})
    rng.shuffle(fillers)
    fillers = fillers[:pool]
    used: set[str] = set()
    fact_questions: list[str] = []
    turns = max(1, records // 2)
    for turn in range(1, turns + 1):
        conv = f"c{(turn - 1) // TURNS_PER_CONVERSATION + 1}"
        said_at = NOW - SPREAD_HOURS * 3600 * (1 - turn / turns)
        user = [rng.choice(fillers) for _ in range(rng.randint(1, 3))]
        if turn % FACT_EVERY == 0:
            template, question = rng.choice(FACTS)
            slots = _slots(rng, _entity(rng, used))
            user.insert(rng.randint(0, len(user)), template.format(**slots))
            fact_questions.append(question.format(**slots))
        reply = [rng.choice(fillers) for _ in range(rng.randint(2, 8))]
        user_text, reply_text = " ".join(user), " ".join(reply)
        corpus.turns.append((turn, conv, user_text, reply_text, said_at))
        for key, role, text in (
            (f"t{turn}", "user", user_text),
            (f"r{turn}", "assistant", reply_text),
        ):
            record_id = len(corpus.records) + 1
            corpus.records.append((record_id, key, conv, turn, text, role, said_at))
            # a packed piece is its sentences; a clause piece, a "sentence" of its own
            pieces = [
                [sentence_id(s) for s in _SENTENCE_END.split(piece) if s]
                for piece in record_pieces(text, role)
            ]
            corpus.record_chunks.append((record_id, pieces))
    asked = rng.sample(fact_questions, min(questions, len(fact_questions)))
    corpus.questions = {
        "fact questions": asked,
        "common words only": [vague_question(rng) for _ in range(max(1, questions // 2))],
        "long pasted message": [long_message(rng, q) for q in asked[: max(1, questions // 4)]],
    }
    return corpus


def chunk_vectors(
    corpus: Corpus, model: MiniLM, seed: int
) -> tuple[list[tuple[int, int, bytes]], int]:
    """(record id, chunk, float32 blob) rows for every chunk, and how many
    distinct sentences were embedded for them."""
    rng = np.random.default_rng(seed)
    sentence_vectors = model.embed(corpus.sentences)
    rows: list[tuple[int, int, bytes]] = []
    for record_id, pieces in corpus.record_chunks:
        for chunk, ids in enumerate(pieces):
            vector = sentence_vectors[ids].sum(axis=0)
            vector /= np.linalg.norm(vector)
            noise = rng.standard_normal(vector.shape[0]).astype(np.float32)
            vector += JITTER * noise / np.linalg.norm(noise)
            vector /= np.linalg.norm(vector)
            rows.append((record_id, chunk, vector.astype("<f4").tobytes()))
    return rows, len(corpus.sentences)


async def build_db(path: Path, corpus: Corpus, model: MiniLM, seed: int) -> dict[str, int]:
    """A migrated newt database holding the corpus and its vectors."""
    store = await Store.open(path)  # runs the real migrations
    await store.close()
    vectors, embedded = chunk_vectors(corpus, model, seed)
    conversations = sorted({conv for _, conv, *_ in corpus.turns}, key=lambda c: int(c[1:]))
    conn = sqlite3.connect(path)
    try:
        with conn:  # one transaction: the FTS triggers index every row
            conn.executemany(
                "INSERT INTO conversations(id, title, created_at, updated_at) VALUES (?, ?, ?, ?)",
                ((conv, conv, NOW, NOW) for conv in conversations),
            )
            conn.executemany(
                "INSERT INTO turns(id, conversation_id, user, assistant, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                corpus.turns,
            )
            conn.executemany(
                "INSERT INTO memory_records(id, key, source, conversation_id, turn_id, content,"
                " created_at, role, said_at) VALUES (?, ?, 'turn', ?, ?, ?, ?, ?, ?)",
                ((i, k, c, t, text, at, role, at) for i, k, c, t, text, role, at in corpus.records),
            )
            conn.executemany(
                "INSERT INTO memory_vectors(record_id, space, chunk, vector) VALUES (?, ?, ?, ?)",
                ((r, LOCAL_SPACE, c, blob) for r, c, blob in vectors),
            )
    finally:
        conn.close()
    return {"records": len(corpus.records), "vectors": len(vectors), "embedded": embedded}


def cache_stem(records: int, seed: int, pool: int) -> str:
    # The schema version too: opening the cache migrates it in place.
    return f"recall-latency-v{CORPUS_VERSION}-s{SCHEMA_VERSION}-seed{seed}-n{records}-p{pool}"


async def cached_db(
    records: int, seed: int, pool: int, questions: int, model: MiniLM, folder: Path = CACHE_DIR
) -> tuple[Path, dict[str, Any]]:
    """The cached database and its description (sizes, questions by kind)."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = cache_stem(records, seed, pool)
    path, meta_path = folder / f"{stem}.db", folder / f"{stem}.json"
    if not (path.exists() and meta_path.exists()):
        started = time.perf_counter()
        corpus = make_corpus(records, seed, pool, questions)
        building = path.with_suffix(".building")
        building.unlink(missing_ok=True)
        sizes = await build_db(building, corpus, model, seed)
        os.replace(building, path)
        meta = {**sizes, "questions": corpus.questions}
        meta_path.write_text(json.dumps(meta))
        print(f"(built {path} in {time.perf_counter() - started:.0f} s)")
    return path, json.loads(meta_path.read_text())


class Phases:
    """Wall-clock intervals of the instrumented calls during one recall."""

    def __init__(self) -> None:
        self.spans: dict[str, list[tuple[float, float]]] = {}

    def wrap(self, name: str, target: object, attribute: str) -> None:
        original: Callable[..., Awaitable[Any]] = getattr(target, attribute)

        @functools.wraps(original)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await original(*args, **kwargs)
            finally:
                self.spans.setdefault(name, []).append((started, time.perf_counter()))

        setattr(target, attribute, timed)

    def reset(self) -> None:
        self.spans = {}

    def ms(self, name: str) -> float:
        return sum(end - start for start, end in self.spans.get(name, ())) * 1000

    def covered_ms(self) -> float:
        """Time inside any instrumented call (overlaps counted once)."""
        total, reach = 0.0, float("-inf")
        for start, end in sorted(s for spans in self.spans.values() for s in spans):
            if end > reach:
                total += end - max(start, reach)
                reach = end
        return total * 1000


PARTS = ("embed", "search", "lexical", "rest")


@dataclass
class Timing:
    kind: str
    total: float
    parts: dict[str, float]
    memories: int


def instrument(engine: RecallEngine) -> Phases:
    phases = Phases()
    assert engine.embedder is not None and engine._vectors is not None
    phases.wrap("embed", engine.embedder, "embed_query")
    phases.wrap("search", engine._vectors, "search")
    phases.wrap("lexical", engine, "_lexical")
    return phases


async def measure(
    path: Path, questions: dict[str, list[str]], cache: Path | None, rounds: int = 1
) -> tuple[list[Timing], float]:
    """Each question's timing (every round), and the first recall's (loading)."""
    async with await Store.open(path) as store:
        embedder = LocalEmbedder(cache)
        engine = RecallEngine(store, embedder=embedder)
        request = RecallRequest("", limit=LIMIT, retained_token_budget=BUDGET)
        started = time.perf_counter()
        request.query = "What did we decide about the server?"
        await engine.recall(request, now=NOW)  # loads the model and the vectors
        first = (time.perf_counter() - started) * 1000
        for query in questions["fact questions"][:5]:  # warm the page cache
            request.query = query
            await engine.recall(request, now=NOW)
        phases = instrument(engine)
        timings: list[Timing] = []

        async def timed(kind: str, query: str) -> None:
            request.query = query
            phases.reset()
            started = time.perf_counter()
            response = await engine.recall(request, now=NOW)
            total = (time.perf_counter() - started) * 1000
            parts = {name: phases.ms(name) for name in PARTS[:3]}
            parts["rest"] = total - phases.covered_ms()
            timings.append(Timing(kind, total, parts, len(response.memories)))

        asked: list[str] = []
        for _ in range(rounds):
            for kind in KINDS:
                for query in questions[kind]:
                    await timed(kind, query)
                    asked.append(query)
        for query in asked[-AGAIN:]:  # as a regenerated reply or a retried turn asks
            await timed(AGAIN_KIND, query)
        await embedder.aclose()
    return timings, first


def pct(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def report(timings: Sequence[Timing]) -> list[str]:
    lines = [
        f"{'query kind':<22} {'n':>4} {'median':>8} {'p90':>8}"
        + "".join(f" {name:>8}" for name in PARTS)
        + f" {'hits':>5}"
    ]
    groups = [(kind, [t for t in timings if t.kind == kind]) for kind in KINDS]
    every = ("all", [t for t in timings if t.kind in KINDS])
    again = (AGAIN_KIND, [t for t in timings if t.kind == AGAIN_KIND])
    for kind, group in [*groups, every, again]:
        if not group:
            continue
        totals = [t.total for t in group]
        parts = "".join(
            f" {statistics.median(t.parts[name] for t in group):5.1f} ms" for name in PARTS
        )
        lines.append(
            f"{kind:<22} {len(group):>4} {statistics.median(totals):5.1f} ms"
            f" {pct(totals, 0.9):5.1f} ms{parts} {statistics.mean(t.memories for t in group):5.1f}"
        )
    return lines


async def run(records: int, seed: int, pool: int, questions: int, rounds: int) -> None:
    from newt.local.setup import embedding_wheel_path

    embedder = LocalEmbedder()
    model = await embedder._ready()  # the wheel, fetched first if it is not cached
    if model is None:
        raise SystemExit(f"no all-MiniLM-L6-v2 ({embedding_wheel_path()}): see scripts/")
    path, meta = await cached_db(records, seed, pool, questions, model)
    timings, first = await measure(path, meta["questions"], None, rounds)
    print(
        f"RecallEngine.recall, MiniLM in process: {meta['records']:,} records,"
        f" {meta['vectors']:,} chunk vectors ({meta['embedded']:,} distinct sentences embedded),"
        f" limit {LIMIT}, budget {BUDGET}, scan on {vectors.SCAN_THREADS} thread(s)"
        " (target: median < 20 ms)"
    )
    print(f"first recall (loads the model and every vector): {first:.0f} ms")
    for line in report(timings):
        print(line)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pool", type=int, default=3000, help="distinct filler sentences")
    parser.add_argument(
        "--questions", type=int, default=40, help="fact questions (half as many of common words)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="passes over the questions")
    parser.add_argument(
        "--scan-threads", type=int, default=0, help="threads of the vector scan (0: newt's)"
    )
    args = parser.parse_args(argv)
    if args.scan_threads:
        vectors.SCAN_THREADS = args.scan_threads
    asyncio.run(run(args.records, args.seed, args.pool, args.questions, args.rounds))


if __name__ == "__main__":
    main()
