"""Where do the LoCoMo evidence turns rank in newt's recall, before any budget?

    python benchmarks/locomo_ranks.py [--conversations conv-41] [--k 100]
        [--tune engine.lexical_weight=0.4] [--homes DIR] [--out FILE]

Plays each development conversation once through the real turn path (kept
in --homes, so later runs only rank), then ranks every record for each
question with the engine's own search (no exclusions, no budget) and prints
the share of questions whose evidence all lies in the top k, per category.
Why: it tells a ranking problem from a packing one in seconds, where
benchmarks/locomo.py takes a quarter of an hour.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import benchmarks.locomo as L
from newt.agent.session.chat_session import ChatSession
from newt.store import Store
from tests.support.fake_openai import FakeOpenAI

HOMES = Path(tempfile.gettempdir()) / "newt-locomo-ranks"


async def ensure_played(d: Any, fake: FakeOpenAI, args: argparse.Namespace) -> Path:
    home = Path(args.homes) / d.name
    if (home / "done").exists():
        return home
    home.mkdir(parents=True, exist_ok=True)
    await L.play(d, home, 8192, fake, args)
    (home / "done").write_text("ok")
    return home


async def probe(
    d: Any, home: Path, fake: FakeOpenAI, args: argparse.Namespace, out: list[dict[str, Any]]
) -> None:
    config = L.make_config(home, fake.base_url, 8192, args.set)
    async with await Store.open(config.db_path) as store:
        session = await ChatSession.open(config, store, probe=False)
        L.tune(session, args.tune)
        eng = session.recall
        try:
            for q in d.questions:
                ev = [L.norm(d.texts[e]) for e in q.evidence]
                recs, _ = await eng._search(q.text, args.k, ())
                ranks = []
                for e in ev:
                    r = next((i for i, m in enumerate(recs) if e in L.norm(m.content)), None)
                    ranks.append(r)
                out.append({"conv": d.name, "cat": q.category, "q": q.text, "ranks": ranks})
        finally:
            await session.close()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", default="")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--tune", action="append", default=[])
    ap.add_argument("--out", default="")
    ap.add_argument("--homes", default=str(HOMES))
    args = ap.parse_args()
    data = L.DEFAULT_DATA
    names = args.conversations.split(",") if args.conversations else None
    ds = [L.load(p) for p in sorted(data.glob("conv-*.json")) if names is None or p.stem in names]
    rows: list[dict[str, Any]] = []
    with FakeOpenAI(n_ctx=8192) as fake:
        for d in ds:
            home = await ensure_played(d, fake, args)
            await probe(d, home, fake, args, rows)
    if args.out:
        Path(args.out).write_text(json.dumps(rows))
    for cut in (5, 10, 15, 20, 30, 50, 100):
        line = []
        for cat, name in L.CATEGORIES.items():
            mine = [r for r in rows if r["cat"] == cat]
            ok = sum(all(x is not None and x < cut for x in r["ranks"]) for r in mine)
            line.append(f"{name} {100 * ok / len(mine):.0f}")
        ok = sum(all(x is not None and x < cut for x in r["ranks"]) for r in rows)
        print(f"top{cut:<4} all {100 * ok / len(rows):.1f}  " + "  ".join(line))


if __name__ == "__main__":
    asyncio.run(main())
