"""Several `newt -p` processes at once on one fresh database: is every prompt stored?

    python benchmarks/concurrent_prints.py [--rounds 10] [--writers 2] [--prompts 3]
                                           [--delay 0.01]

Each round makes a new NEWT_HOME (so a fresh newt.db that every process must
create and migrate), starts `writers * prompts` `newt -p` processes at the
same moment against the fake OpenAI server, waits for them all and counts the
prompts stored as complete turns. It prints one line per round (stored,
failed exits, wall time) and a total; any failed process's stderr is shown.
tests/integration/store/test_concurrency.py runs the same rounds as a test.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.fake_openai import FakeOpenAI, Reply  # noqa: E402


@dataclass
class RoundResult:
    prompts: list[str]
    stored: int
    seconds: float
    failures: list[str] = field(default_factory=list)
    """'exit N: <stderr>' for each process that did not exit 0."""


def stored_prompts(db_path: Path, prompts: list[str]) -> int:
    """How many of `prompts` are in the database as completed turns."""
    conn = sqlite3.connect(db_path)
    try:
        rows = conn.execute("SELECT user FROM turns WHERE status = 'complete'").fetchall()
    finally:
        conn.close()
    found = {row[0] for row in rows}
    return sum(1 for p in prompts if p in found)


def run_round(
    base_url: str,
    home: Path,
    *,
    processes: int,
    extra_args: tuple[str, ...] = (),
    tag: str = "",
    timeout: float = 120.0,
) -> RoundResult:
    """Start `processes` `newt -p` at once with NEWT_HOME=home; wait; count what was stored."""
    env = {**os.environ, "NEWT_HOME": str(home), "PYTHONPATH": str(ROOT)}
    for var in ("NEWT_CONFIG", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        env.pop(var, None)
    prompts = [f"prompt {tag}{i} about newts" for i in range(processes)]
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "newt",
                "--base-url",
                base_url,
                "--model",
                "fake-model",
                *extra_args,
                "-p",
                prompt,
            ],
            cwd=home.parent,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for prompt in prompts
    ]
    failures = []
    for proc in procs:
        _out, err = proc.communicate(timeout=timeout)
        if proc.returncode != 0:
            failures.append(f"exit {proc.returncode}: {err.strip()}")
    seconds = time.monotonic() - started
    stored = stored_prompts(home / "newt.db", prompts) if (home / "newt.db").exists() else 0
    return RoundResult(prompts, stored, seconds, failures)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--prompts", type=int, default=3, help="prompts per writer")
    parser.add_argument("--delay", type=float, default=0.01, help="fake server s per chunk")
    args = parser.parse_args(argv)
    total = stored = 0
    server = FakeOpenAI(default_reply=Reply(delay_s=args.delay))
    with server, tempfile.TemporaryDirectory() as tmp:
        for n in range(args.rounds):
            home = Path(tmp) / f"round{n}" / "home"
            home.parent.mkdir()
            result = run_round(
                server.base_url, home, processes=args.writers * args.prompts, tag=f"r{n}-"
            )
            total += len(result.prompts)
            stored += result.stored
            print(
                f"round {n + 1:2}: {result.stored}/{len(result.prompts)} stored, "
                f"{len(result.failures)} failed, {result.seconds:.2f} s"
            )
            for failure in result.failures:
                print(f"    {failure}")
    print(f"total: {stored}/{total} prompts stored")
    return 0 if stored == total else 1


if __name__ == "__main__":
    raise SystemExit(main())
