"""How the llama-server newt runs reads a long prompt: progress reports, speed, and how
soon it is free again after a request is stopped mid-prompt.

    .venv/bin/python benchmarks/prompt_reading.py [--batch N] [--model PATH]

Starts the managed server as `newt --local` does (local_switch.managed_server:
Qwen2.5-Coder-1.5B from the cache by default, an 8,192 window), with `-b N -ub N`
in place of newt's batch when --batch is given (0: llama-server's defaults). It
sends a ~1,440-token prompt with return_progress and prints each progress report
(seconds since the request, tokens read), the time to the first token and
llama-server's own timings; then it sends another prompt, hangs up at its first
progress report, and times a tiny request sent at once: the wait is the server
finishing the batch it was reading. Results go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from newt.agent.local.managed_server import managed_server
from newt.local.setup import cache_dir

WORDS = "the quick brown fox jumps over a lazy dog while seven grey cats watch an old barn"


def prompt(seed: int) -> str:
    rng = random.Random(seed)
    words = WORDS.split()
    text = " ".join(rng.choice(words) for _ in range(1400))
    return text + "\nSummarise the text above in one sentence."


def read(base_url: str, seed: int, hang_up: bool = False) -> dict[str, Any]:
    body = {
        "model": "m", "stream": True, "return_progress": True, "max_tokens": 64,
        "temperature": 0, "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": prompt(seed)}],
    }  # fmt: skip
    started = time.monotonic()
    out: dict[str, Any] = {"progress": [], "first_token_s": None, "timings": None}
    with httpx.stream("POST", f"{base_url}/chat/completions", json=body, timeout=600) as r:
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if "prompt_progress" in chunk:
                report = chunk["prompt_progress"]
                out["progress"].append((time.monotonic() - started, report["processed"]))
                if hang_up:
                    return out
            for choice in chunk.get("choices") or []:
                text = (choice.get("delta") or {}).get("content")
                if text and out["first_token_s"] is None:
                    out["first_token_s"] = time.monotonic() - started
            out["timings"] = chunk.get("timings") or out["timings"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=None, help="-b/-ub (0: llama's default)")
    parser.add_argument(
        "--model", type=Path, default=cache_dir() / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    )
    args = parser.parse_args()
    server = managed_server(args.model)
    if args.batch is not None:
        at = server.extra_args.index("-b")
        del server.extra_args[at : at + 4]
        if args.batch:
            server.extra_args += ["-b", str(args.batch), "-ub", str(args.batch)]
    server.start()
    try:
        print(f"llama-server {' '.join(server.extra_args)}, window {server.ctx}")
        run = read(server.base_url, 1)
        for seconds, tokens in run["progress"]:
            print(f"  progress at {seconds:5.1f} s: {tokens} tokens read")
        timings = run["timings"] or {}
        print(
            f"first token after {run['first_token_s']:.1f} s; prompt "
            f"{timings.get('prompt_n')} tokens at {timings.get('prompt_per_second', 0):.1f}/s, "
            f"reply {timings.get('predicted_n')} at {timings.get('predicted_per_second', 0):.1f}/s"
        )
        read(server.base_url, 2, hang_up=True)
        asked = time.monotonic()
        tiny = {"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}
        httpx.post(f"{server.base_url}/chat/completions", json=tiny, timeout=600)
        print(f"stopped mid-prompt: a tiny request answered {time.monotonic() - asked:.1f} s later")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
