"""What a warm local model saves a `newt -c -p` conversation.

    .venv/bin/python benchmarks/warm_local.py [--model GGUF] [--turns 6]

Plays the same short conversation twice through the real command line, each
turn its own `newt --local MODEL [-c] -p MESSAGE --json` process on a fresh
NEWT_HOME: once with `NEWT_LOCAL_KEEP_ALIVE=0` (every process starts
llama-server, loads the model and reads the whole conversation), once with
the server kept warm (`NEWT_LOCAL_KEEP_ALIVE=120`: the first process starts
it, the others attach to it and its prompt cache); then `newt --local
--stop`. The model defaults to Qwen2.5-Coder-1.5B-Instruct from
~/.cache/newt-llama (scripts/get_llama_server.sh).

Per turn: the process's wall time (start to exit), the part of it before the
reply streamed (wall time less completion tokens over the reply's tokens a
second: starting, loading, reading the prompt, recall), and the prompt tokens
the reply's request carried. Run it alone: two llama-servers on two cores crawl.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from newt.local.server import cache_dir

MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MESSAGES = [
    "Hi! I'm planning a vegetable garden on a small balcony that gets sun in the afternoon.",
    "Which vegetables would grow well in pots there? I like tomatoes and herbs most.",
    "How often should I water tomatoes in pots in the summer?",
    "My neighbour says coffee grounds help. Is that true for tomatoes?",
    "What should I plant next to the tomatoes to keep pests away?",
    "Thanks. Can you sum up what I should buy this weekend?",
    "And which of those can I still sow in late May?",
    "One more: how big should the pots be for the tomatoes?",
]


def newt(
    home: Path, keep_alive: str, model: str, text: str, *, resume: bool
) -> tuple[float, float, int]:
    """(wall seconds, seconds before the reply streamed, prompt tokens) of one process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "NEWT_"))}
    env.update(NEWT_HOME=str(home), NEWT_LOCAL_KEEP_ALIVE=keep_alive)
    argv = [sys.executable, "-m", "newt", "--local", model, *(["-c"] if resume else [])]
    started = time.perf_counter()
    done = subprocess.run(
        [*argv, "-p", text, "--json"], env=env, capture_output=True, text=True, timeout=900
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"newt failed ({done.returncode}): {done.stderr[-800:]}")
    usage = json.loads(done.stdout).get("usage") or {}
    writing = (usage.get("completion_tokens") or 0) / (usage.get("tokens_per_second") or 1e9)
    return seconds, seconds - writing, int(usage.get("prompt_tokens") or 0)


def play(keep_alive: str, model: str, turns: int) -> list[tuple[float, float, int]]:
    with tempfile.TemporaryDirectory(prefix="newt-warm-") as tmp:
        home = Path(tmp)
        rows = []
        for n, text in enumerate(MESSAGES[:turns]):
            rows.append(newt(home, keep_alive, model, text, resume=n > 0))
            wall, before, _ = rows[-1]
            said = f"{wall:.1f} s ({before:.1f} s before the reply)"
            print(f"  keep_alive={keep_alive} turn {n + 1}: {said}", flush=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("NEWT_")}
        env["NEWT_HOME"] = str(home)
        subprocess.run([sys.executable, "-m", "newt", "--local", "--stop"], env=env, check=True)
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(cache_dir() / MODEL))
    parser.add_argument("--turns", type=int, default=6)
    args = parser.parse_args()
    cold = play("0", args.model, args.turns)
    warm = play("120", args.model, args.turns)
    print()
    print("| turn | prompt tokens | stops with newt: before the reply / all (s) | kept warm |")
    print("|---|---|---|---|")
    for n, ((cw, cb, tokens), (ww, wb, _)) in enumerate(zip(cold, warm, strict=True), 1):
        print(f"| {n} | {tokens} | {cb:.1f} / {cw:.1f} | {wb:.1f} / {ww:.1f} |")
    median = statistics.median
    print(
        f"| turns 2-{args.turns}, median | | {median([r[1] for r in cold[1:]]):.1f} / "
        f"{median([r[0] for r in cold[1:]]):.1f} | {median([r[1] for r in warm[1:]]):.1f} / "
        f"{median([r[0] for r in warm[1:]]):.1f} |"
    )


if __name__ == "__main__":
    main()
