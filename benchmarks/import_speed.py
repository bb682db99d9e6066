"""Time `newt import` of 10,000 turns (generated newt JSON, 100 conversations) into a fresh store.

Run: .venv/bin/python benchmarks/import_speed.py [--turns N]"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import tempfile
import time
from pathlib import Path

from newt.cli.import_command import run_import


def generate(path: Path, turns: int, per_conversation: int = 100) -> None:
    start = 1_600_000_000.0
    with path.open("w") as fh:
        for c in range(turns // per_conversation):
            rows = [
                {
                    "user": f"Message {c}.{n}: what about the garden, the trip and the dog?",
                    "assistant": f"Reply {c}.{n}: " + "some helpful words " * 12,
                    "created_at": start + c * 86400 + n * 60,
                }
                for n in range(per_conversation)
            ]
            conv = {"id": f"bench{c}", "title": f"Bench {c}", "created_at": start, "turns": rows}
            fh.write(json.dumps(conv) + "\n")


async def main(turns: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src, db = Path(tmp) / "history.jsonl", Path(tmp) / "newt.db"
        generate(src, turns)
        t0 = time.perf_counter()
        await run_import(db, src, None, dry_run=False, err=io.StringIO())
        took = time.perf_counter() - t0
        print(f"{turns} turns imported in {took:.2f} s ({turns / took:,.0f} turns/s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=10_000)
    asyncio.run(main(parser.parse_args().turns))
