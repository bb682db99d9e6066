"""Which recall rules earn their place: each one turned off in turn, on every
LoCoMo development conversation, both windows.

    python benchmarks/recall_ablation.py [--played DIR] [--windows 2048,8192]
        [--only NAME,NAME] [--json-out FILE]

Each variant asks every question of the five development conversations the
way benchmarks/locomo.py does (the real turn path against the fake server, on
a copy of the played database; `--played DIR` reuses locomo.py's) and counts
the questions whose evidence is all in the request, per conversation.

Leave one conversation out: a rule that is on or off has nothing to tune, so
its contribution on a held-out conversation is simply its figure there with
the rule against without it; the table gives the mean over the five held-out
folds and on how many folds it helps. A tunable's value (RecallTuning) was
chosen on other conversations in earlier sessions; here it is measured
against the rule turned off. docs/benchmarks.md keeps the current table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.locomo import DEFAULT_DATA, ask, load, norm, play, request_text  # noqa: E402
from tests.support.fake_openai import FakeOpenAI  # noqa: E402

# name -> (--set values, --tune values): the rule turned off
VARIANTS: dict[str, tuple[list[str], list[str]]] = {
    "all rules": ([], []),
    "meaning (MiniLM) fused with words": (["recall.embeddings=off"], []),
    "said then (time the query names)": ([], ["span_weight=0"]),
    "floor (related records only)": (
        [],
        ["gate_cosine=-2", "gate_coverage=0", "record_cosine=-2", "record_coverage=0"],
    ),
    "pairs (both halves of a turn)": ([], ["pair_share=0"]),
    "neighbours of the best hits": ([], ["neighbour_hits=0"]),
    "newer links among candidates": ([], ["newer_links=false"]),
    "sittings": ([], ["sitting_share=0"]),
}


async def measure(
    names: Sequence[str], windows: Sequence[int], played: Path, data: Path, tmp: Path
) -> dict[str, dict[str, dict[str, list[int]]]]:
    """variant -> window -> conversation -> [all evidence in, questions]."""
    dialogues = [load(p) for p in sorted(data.glob("conv-*.json"))]
    out: dict[str, dict[str, dict[str, list[int]]]] = {}
    for window in windows:
        with FakeOpenAI(n_ctx=window) as fake:
            for dialogue in dialogues:
                home = played / f"{dialogue.name}-{window}"
                if not (home / "played").exists():
                    home.mkdir(parents=True, exist_ok=True)
                    await play(dialogue, home, window, fake, _args([], []))
                    (home / "played").write_text("ok")
                for name in names:
                    sets, tunes = VARIANTS[name]
                    started = time.perf_counter()
                    hits = 0
                    for question in dialogue.questions:
                        asked = await ask(
                            dialogue, home / "newt.db", tmp / "q", window, fake, question,
                            _args(sets, tunes),
                        )  # fmt: skip
                        sent = request_text(asked.request) if asked.request else ""
                        hits += all(norm(dialogue.texts[e]) in sent for e in question.evidence)
                    cell = out.setdefault(name, {}).setdefault(str(window), {})
                    cell[dialogue.name] = [hits, len(dialogue.questions)]
                    took = time.perf_counter() - started
                    print(
                        f"  {name} @ {window} {dialogue.name}: {hits}/{len(dialogue.questions)}"
                        f" in {took:.0f} s",
                        file=sys.stderr,
                        flush=True,
                    )
    return out


def _args(sets: list[str], tunes: list[str]) -> argparse.Namespace:
    return argparse.Namespace(set=sets, tune=tunes)


def table(results: dict[str, dict[str, dict[str, list[int]]]]) -> list[str]:
    base = results["all rules"]
    windows = sorted(base, key=int)
    head = "| rule (turned off) | " + " | ".join(
        f"{w}: all evidence without | {w}: held-out folds, mean gain (helps on)" for w in windows
    )
    lines = [head + " |", "|---|" + "---|---|" * len(windows)]
    for name, by_window in results.items():
        cells = []
        for w in windows:
            mine, ref = by_window[w], base[w]
            total = sum(n for _, n in ref.values())
            without = 100.0 * sum(h for h, _ in mine.values()) / total
            gains = [100.0 * (ref[c][0] - mine[c][0]) / ref[c][1] for c in ref]
            helps = sum(g > 0 for g in gains)
            mean = sum(gains) / len(gains)
            cells += [f"{without:.1f}%", f"{mean:+.1f} ({helps}/{len(gains)})"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--played", default="")
    parser.add_argument("--windows", default="2048,8192")
    parser.add_argument("--only", default="", help="variants to run besides 'all rules'")
    parser.add_argument("--json-out", default="")
    args = parser.parse_args(argv)
    names = list(VARIANTS)
    if args.only:
        names = ["all rules", *(n for n in names if n in args.only.split(","))]
    windows = [int(w) for w in args.windows.split(",")]
    with tempfile.TemporaryDirectory(prefix="newt-ablation-") as tmp:
        played = Path(args.played) if args.played else Path(tmp) / "played"
        results = asyncio.run(measure(names, windows, played, Path(args.data), Path(tmp)))
    print("\n".join(table(results)))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
