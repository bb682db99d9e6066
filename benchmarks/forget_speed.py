"""How long forgetting takes on a big store: preview, forget, delete, scrub.

    .venv/bin/python benchmarks/forget_speed.py [--records 100000] [--rounds 3]

On a copy of benchmarks/recall_latency.py's cached database (`--records`
chat-like records with their MiniLM vectors; built first if missing), each
round stores a turn holding a unique word in the newest conversation, then
times, through newt.agent.own_memory.records.MemoryRecords as the session calls it:
the preview of "forget every record matching" the word, the forget itself
(records, log text, summaries checked for quotes, then the scrub: FTS5
`optimize` and the WAL truncated), deleting one whole conversation (25
turns), and the scrub alone. Reported: the median of each over the rounds.
The scrub rewrites the whole FTS5 index, so it grows with the store.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.recall_latency import cached_db  # noqa: E402
from newt.agent.own_memory.records import MemoryRecords  # noqa: E402
from newt.recall import RecallEngine  # noqa: E402
from newt.recall.embedder import LocalEmbedder  # noqa: E402
from newt.store import Store  # noqa: E402


async def run(records: int, rounds: int) -> None:
    embedder = LocalEmbedder()
    model = await embedder._ready()
    if model is None:
        raise SystemExit("no all-MiniLM-L6-v2 wheel: see scripts/get_llama_server.sh")
    source, meta = await cached_db(records, 7, 3000, 40, model)
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "newt.db"
        shutil.copyfile(source, path)
        async with await Store.open(path) as store:
            admin = MemoryRecords(store, lambda: RecallEngine(store))
            for n in range(rounds):
                conv = await store.conversations.latest()
                assert conv is not None
                word = f"uniqueword{n}x"
                turn = await store.turns.add_pending(conv.id, f"my code word is {word}")
                await store.turns.complete(turn, f"Noted, {word}.")
                for name, work in (
                    ("preview", lambda w=word: admin.matching(w)),
                    ("forget matching", lambda w=word: admin.forget_matching(w)),
                    ("delete a conversation", lambda c=conv: admin.delete_conversation(c)),
                    ("scrub alone", admin.eraser.scrub),
                ):
                    started = time.perf_counter()
                    await work()
                    times.setdefault(name, []).append(time.perf_counter() - started)
    print(
        f"forgetting on {meta['records']:,} records ({meta['vectors']:,} vectors), {rounds} rounds"
    )
    for name, values in times.items():
        print(f"{name:<22} median {statistics.median(values) * 1000:7.1f} ms")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    asyncio.run(run(args.records, args.rounds))


if __name__ == "__main__":
    main()
