"""What recall by meaning costs with all-MiniLM-L6-v2, in process or on llama-server.

    .venv/bin/python benchmarks/embedding_speed.py --in-process [--records 1000]
    .venv/bin/python benchmarks/embedding_speed.py [--records 1000] [--threads 1]

--in-process: newt's default, LocalEmbedder (recall/minilm.py, numpy; the wheel
that scripts/get_llama_server.sh keeps in the cache). Otherwise starts the
embeddings server as `newt --local` did (the MiniLM GGUF that
scripts/get_llama_server.sh makes; `-c 512 -t 1`). Then measures:
  * one embedding per request (a recall query's cost), median and p90 of 60;
  * the background queue (EmbedQueue) embedding a store of --records turns
    (a user line and a reply of a few sentences each, 150-700 characters)
    from nothing: wall time, records per second, ms per record;
  * VectorIndex.search over those vectors (the other half of a query's cost).
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

from newt.backend.embeddings import EmbeddingsClient
from newt.local.server import embeddings_server
from newt.recall.embed_queue import EmbedQueue
from newt.recall.embedder import Embedder, LocalEmbedder, ServerEmbedder
from newt.recall.vectors import VectorIndex
from newt.store import Store

SUBJECTS = ["my sister", "the landlord", "our team", "the dentist", "my neighbour",
            "the bakery", "the train to Porto", "the garden club", "my laptop",
            "the quarterly report"]  # fmt: skip
VERBS = ["moved", "called about", "asked for", "forgot", "fixed", "cancelled", "booked",
         "reviewed", "paid for", "talked about"]  # fmt: skip
OBJECTS = ["the spare key", "a new schedule", "the blue folder", "the invoice", "a table for six",
           "the wifi password", "the broken hinge", "the conference badge", "the tax forms",
           "the parking permit"]  # fmt: skip
WHEN = ["on Monday", "last week", "at ten", "before lunch", "after the meeting", "in March"]


def sentence(rng: random.Random) -> str:
    return (
        f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
        f"{rng.choice(WHEN)}."
    )


def turn_texts(rng: random.Random) -> tuple[str, str]:
    user = " ".join(sentence(rng) for _ in range(rng.randint(1, 3)))
    reply = " ".join(sentence(rng) for _ in range(rng.randint(2, 8)))
    return user, reply


async def single_requests(client: EmbeddingsClient, rng: random.Random) -> list[float]:
    await client.embed(["warm up"])
    timings = []
    for _ in range(60):
        text = sentence(rng)
        started = time.perf_counter()
        await client.embed([text])
        timings.append((time.perf_counter() - started) * 1000)
    return timings


async def queue_run(embedder: Embedder, records: int, rng: random.Random) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with await Store.open(Path(tmp) / "newt.db") as store:
            conv = await store.conversations.create()
            chars = 0
            for _ in range(records):
                user, reply = turn_texts(rng)
                chars += len(user) + len(reply)
                turn_id = await store.turns.add_pending(conv.id, user)
                await store.turns.complete(turn_id, reply)
            queue = EmbedQueue(store.db, embedder)
            index = VectorIndex(store.db, embedder.space)
            pending = len(await index.pending(records * 2))
            started = time.perf_counter()
            queue.start()
            try:
                if not await queue.wait_idle(3600):
                    raise SystemExit("the queue did not finish within an hour")
            finally:
                await queue.aclose()
            wall = time.perf_counter() - started
            cur = await store.db.conn.execute("SELECT count(*) FROM memory_vectors")
            row = await cur.fetchone()
            chunks = row[0] if row else 0
            print(
                f"queue: {queue.embedded:,} of {pending:,} pending records "
                f"({chars / max(records, 1):.0f} chars each on average, {chunks:,} chunks) "
                f"in {wall:.1f} s: {queue.embedded / wall:.0f} records/s, "
                f"{wall * 1000 / max(queue.embedded, 1):.1f} ms per record"
            )
            searches = []
            for _ in range(30):
                query = await embedder.embed_query(sentence(rng))
                assert query is not None
                started = time.perf_counter()
                await index.search(query, 16)
                searches.append((time.perf_counter() - started) * 1000)
            print(f"search over {chunks:,} vectors: median {statistics.median(searches):.1f} ms")
            await embedder.aclose()


async def in_process(args: argparse.Namespace) -> int:
    rng = random.Random(11)
    embedder = LocalEmbedder(fetch=False)
    started = time.perf_counter()
    if await embedder.embed(["warm up"]) is None:
        raise SystemExit("no MiniLM wheel in the cache: run scripts/get_llama_server.sh")
    print(f"all-MiniLM-L6-v2 in process (numpy), loaded in {time.perf_counter() - started:.2f} s")
    timings = []
    for _ in range(60):
        text = sentence(rng)
        started = time.perf_counter()
        await embedder.embed_query(text)
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    p90 = timings[int(len(timings) * 0.9)]
    print(
        f"one query embedding: median {statistics.median(timings):.1f} ms, "
        f"p90 {p90:.1f} ms (n={len(timings)})"
    )
    batch = [" ".join(turn_texts(rng))[:200] for _ in range(32)]
    started = time.perf_counter()
    await embedder.embed(batch)
    wall = (time.perf_counter() - started) * 1000
    print(f"32 pieces of 200 characters in one call: {wall:.0f} ms, {wall / 32:.1f} ms each")
    await queue_run(embedder, args.records, rng)
    return 0


async def main_async(args: argparse.Namespace) -> int:
    if args.in_process:
        return await in_process(args)
    server = embeddings_server()
    if server is None:
        raise SystemExit("no MiniLM GGUF in the cache: run scripts/get_llama_server.sh")
    server.threads = args.threads
    rng = random.Random(11)
    started = time.perf_counter()
    async with server:
        print(f"all-MiniLM-L6-v2 Q8_0, llama-server -c {server.ctx} -t {server.threads}")
        print(f"server ready in {time.perf_counter() - started:.2f} s")
        client = EmbeddingsClient(server.base_url, server.model_name)
        try:
            timings = sorted(await single_requests(client, rng))
        finally:
            await client.aclose()
        p90 = timings[int(len(timings) * 0.9)]
        print(
            f"one embedding per request: median {statistics.median(timings):.1f} ms, "
            f"p90 {p90:.1f} ms (n={len(timings)})"
        )
        embedder = ServerEmbedder(EmbeddingsClient(server.base_url, server.model_name))
        await queue_run(embedder, args.records, rng)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1, help="llama-server -t")
    parser.add_argument("--in-process", action="store_true", help="newt's LocalEmbedder")
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
