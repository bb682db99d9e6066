"""Evidence kept per token: raw chunks vs head capsules vs query-aware capsules.

    python benchmarks/evidence_retention.py [--quick] [--seed N]

1. Accuracy. A seeded corpus of 200 chat-like records (300-800 tokens of
   filler, one distinctive fact each; see benchmarks/evidence_corpus.py) goes into a
   real newt database. For every fact a question phrased differently from it
   is recalled with the real FTS5 engine (limit 8, so hits are counted and
   recoverability drifts as a live store's would), and for each budget we
   check whether the fact survives verbatim in what is kept by
   (a) raw chunks: whole records dumped in rank order, the last one cut to
       fill the budget exactly (the generous version of the baseline);
   (b) head capsules: retain_within_budget without a query (the first design);
   (c) query-aware capsules: retain_within_budget with the question.
2. Latency of recall + retention (budget 1024) on 100,000 such records, for
   the fact questions, for questions made only of common words (no rare word
   to narrow the search) and for long pasted messages ending in a question
   (as the agent recalls with the user's whole text). The
   database is built once with executemany in one transaction and cached
   under /tmp keyed by seed and size; reruns reuse it (recall's hit counting
   updates access counts in the cache, which only shifts recoverability).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.evidence_corpus import Record, long_message, make_corpus, vague_question
from newt.recall import (
    RecallEngine,
    RecallRequest,
    RecallResponse,
    est_tokens,
    retain_within_budget,
)
from newt.recall.engine import to_candidates
from newt.store import SCHEMA_VERSION, MemoryRecord, Store

BUDGETS = (512, 1024, 2048, 8192)
RECALL_LIMIT = 8
LATENCY_BUDGET = 1024
NOW = 1_750_000_000.0
CACHE_DIR = Path(tempfile.gettempdir()) / "newt-bench"
# Bump when benchmarks/evidence_corpus.py changes what it generates, to invalidate caches.
CORPUS_VERSION = 3


async def build_db(path: Path, records: Sequence[Record]) -> None:
    """A migrated newt database holding `records` as turn memory records."""
    store = await Store.open(path)  # runs the real migrations
    await store.close()
    conn = sqlite3.connect(path)
    try:
        with conn:  # one transaction: the FTS triggers index every row
            conn.executemany(
                "INSERT INTO memory_records(key, source, content, created_at)"
                " VALUES (?, 'turn', ?, ?)",
                ((r.key, r.content, r.created_at) for r in records),
            )
    finally:
        conn.close()


def raw_dump(memories: Sequence[MemoryRecord], budget: int) -> list[str]:
    """Whole records in rank order until the budget is full; the last one is cut to fit."""
    kept, remaining = [], budget
    for memory in memories:
        if remaining <= 0:
            break
        text = memory.content[: remaining * 4]
        kept.append(text)
        remaining -= est_tokens(text)
    return kept


def _pct(hits: int, total: int) -> str:
    return f"{100.0 * hits / max(total, 1):5.1f}%"


async def accuracy(seed: int, count: int) -> None:
    corpus = make_corpus(seed, count, now=NOW)
    methods = ("raw chunks", "head capsules", "query-aware")
    kept = {(m, b): 0 for m in methods for b in BUDGETS}
    tokens = {(m, b): 0 for m in methods for b in BUDGETS}
    records = {(m, b): 0 for m in methods for b in BUDGETS}
    rank_first = rank_any = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "newt.db"
        await build_db(path, corpus)
        async with await Store.open(path) as store:
            engine = RecallEngine(store)
            for record in corpus:
                response = await engine.recall(
                    RecallRequest(record.question, limit=RECALL_LIMIT), now=NOW
                )
                keys = [m.key for m in response.memories]
                rank_first += keys[:1] == [record.key]
                rank_any += record.key in keys
                candidates = to_candidates(response.memories, NOW)
                for budget in BUDGETS:
                    raw = raw_dump(response.memories, budget)
                    head = retain_within_budget(candidates, budget)
                    # Exactly what the engine does with a budget (the same excerpt words).
                    aware = retain_within_budget(candidates, budget, query=" ".join(response.terms))
                    outcomes = {
                        "raw chunks": (raw, sum(est_tokens(t) for t in raw)),
                        "head capsules": ([c.excerpt for c in head.capsules], head.retained_tokens),
                        "query-aware": ([c.excerpt for c in aware.capsules], aware.retained_tokens),
                    }
                    for method, (texts, used) in outcomes.items():
                        kept[method, budget] += any(record.fact in t for t in texts)
                        tokens[method, budget] += used
                        records[method, budget] += len(texts)

    n = len(corpus)
    print(
        f"Evidence kept per token: {n} records of 300-800 tokens, one fact each;"
        f" {n} questions; recall limit {RECALL_LIMIT}; seed {seed}"
    )
    print(
        f"retrieval: target record ranked 1st for {_pct(rank_first, n)},"
        f" in the top {RECALL_LIMIT} for {_pct(rank_any, n)}"
    )
    print()
    print(
        "fact kept verbatim (% of questions)"
        + " " * 12
        + "| mean tokens kept    | mean records kept"
    )
    short = "  ".join(f"{m.split()[0].split('-')[0]:>5}" for m in methods)
    print(f"{'budget':>6}  " + "".join(f"{m:>14}" for m in methods) + f"  | {short} | {short}")
    for budget in BUDGETS:
        cells = "".join(f"{_pct(kept[m, budget], n):>14}" for m in methods)
        mean_used = "  ".join(f"{tokens[m, budget] / n:5.0f}" for m in methods)
        mean_kept = "  ".join(f"{records[m, budget] / n:5.1f}" for m in methods)
        print(f"{budget:>6}  {cells}  | {mean_used} | {mean_kept}")
    print()


async def latency_db(seed: int, count: int) -> tuple[Path, list[tuple[str, str, str]]]:
    """The cached big database and (question, key, fact) probes for it."""
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    # The schema version too: opening the cache migrates it in place.
    stem = f"records-v{CORPUS_VERSION}-s{SCHEMA_VERSION}-seed{seed}-n{count}"
    path, probes_path = CACHE_DIR / f"{stem}.db", CACHE_DIR / f"{stem}.json"
    if not (path.exists() and probes_path.exists()):
        started = time.perf_counter()
        corpus = make_corpus(seed, count, now=NOW)
        building = path.with_suffix(".building")
        building.unlink(missing_ok=True)
        await build_db(building, corpus)
        os.replace(building, path)
        step = max(1, count // 500)
        probes = [(r.question, r.key, r.fact) for r in corpus[::step]]
        probes_path.write_text(json.dumps(probes))
        print(f"(built {path} in {time.perf_counter() - started:.1f} s)")
    return path, [tuple(p) for p in json.loads(probes_path.read_text())]


async def _timed(
    engine: RecallEngine, queries: Sequence[str]
) -> tuple[list[float], list[RecallResponse]]:
    request = RecallRequest("", limit=RECALL_LIMIT, retained_token_budget=LATENCY_BUDGET)
    timings, responses = [], []
    for query in queries:
        request.query = query
        started = time.perf_counter()
        responses.append(await engine.recall(request, now=NOW))
        timings.append((time.perf_counter() - started) * 1000)
    return timings, responses


def _kept(response: RecallResponse, fact: str) -> bool:
    report = response.retained_evidence
    return report is not None and any(fact in c.excerpt for c in report.capsules)


async def latency(seed: int, count: int, queries: int) -> None:
    path, probes = await latency_db(seed, count)
    probes = probes[:queries]
    rng = random.Random(seed)
    kinds = {
        "fact questions": [q for q, _, _ in probes],
        "common words only": [vague_question(rng) for _ in range(queries // 3)],
        "250-token message + question": [
            long_message(rng, q) for q, _, _ in probes[: queries // 3]
        ],
    }
    async with await Store.open(path) as store:
        engine = RecallEngine(store)
        await _timed(engine, kinds["fact questions"][:10])  # warm the page cache
        results = {kind: await _timed(engine, qs) for kind, qs in kinds.items()}

    print(
        f"Recall + retention latency: {count:,} records, limit {RECALL_LIMIT},"
        f" budget {LATENCY_BUDGET} (target: median < 20 ms)"
    )
    print(f"{'query kind':<30} {'n':>4} {'median':>8} {'p95':>8} {'max':>8} {'hits':>5}")
    for kind, (timings, responses) in results.items():
        timings = sorted(timings)
        p95 = timings[min(len(timings) - 1, int(0.95 * len(timings)))]
        hits = statistics.mean(len(r.memories) for r in responses)
        print(
            f"{kind:<30} {len(timings):>4} {statistics.median(timings):>5.1f} ms"
            f" {p95:>5.1f} ms {timings[-1]:>5.1f} ms {hits:>5.1f}"
        )
    for kind in ("fact questions", "250-token message + question"):
        responses = results[kind][1]
        first = sum(
            bool(r.memories) and r.memories[0].key == key
            for r, (_, key, _) in zip(responses, probes, strict=False)
        )
        kept = sum(_kept(r, fact) for r, (_, _, fact) in zip(responses, probes, strict=False))
        print(
            f"{kind}: target ranked 1st {_pct(first, len(responses))},"
            f" fact kept by query-aware capsules {_pct(kept, len(responses))}"
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 records for latency")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    asyncio.run(accuracy(args.seed, 200))
    count, queries = (10_000, 100) if args.quick else (100_000, 300)
    asyncio.run(latency(args.seed, count, queries))


if __name__ == "__main__":
    main()
