"""`newt import PATH` / `newt import --from APP`: other apps' history into newt's store."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import TextIO

from newt.config import ConfigError, load_config
from newt.errors import describe
from newt.importing import SOURCES, ImportFormatError, default_path, import_conversations
from newt.importing.sources import SQLITE_APPS, read_source
from newt.store import Store, StoreError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="newt import",
        description="Import conversations: a ChatGPT or Claude export, newt JSON/JSONL,"
        " or the database of Elia, oterm or llm (found where the app keeps it).",
    )
    parser.add_argument("path", nargs="?", help="the file (its kind is told from its content)")
    parser.add_argument("--from", dest="source", choices=sorted(SOURCES), help="what wrote it")
    parser.add_argument("--dry-run", action="store_true", help="say what would be imported")
    parser.add_argument("--config", help="the config file (default: newt's own)")
    return parser


class ProgressBar:
    """Conversations done/total and turns/s on stderr, redrawn in place on a terminal only."""

    def __init__(self, out: TextIO, total: int | None) -> None:
        self.out, self.total = out, total
        self.live = out.isatty()
        self.start = time.monotonic()
        self.last = 0.0

    def __call__(self, done: int, turns: int) -> None:
        now = time.monotonic()
        if not self.live or (now - self.last < 0.1 and done != self.total):
            return
        self.last = now
        rate = turns / max(now - self.start, 1e-6)
        if self.total:
            filled = int(30 * done / self.total)
            bar = "#" * filled + "-" * (30 - filled)
            self.out.write(f"\r[{bar}] {done}/{self.total} conversations, {rate:,.0f} turns/s")
        else:
            self.out.write(f"\r{done} conversations, {rate:,.0f} turns/s")
        self.out.flush()

    def finish(self) -> None:
        if self.live:
            self.out.write("\n")


async def run_import(
    db_path: Path, path: Path, source: str | None, *, dry_run: bool, err: TextIO
) -> int:
    name, stream = read_source(path, source)
    items = list(stream)  # a whole-file problem shows here, before anything is written
    bar = ProgressBar(err, len(items))
    async with await Store.open(db_path) as store:
        summary = await import_conversations(store, items, dry_run=dry_run, progress=bar)
    bar.finish()
    for line in summary.report(name, dry_run=dry_run):
        err.write(line + "\n")
    return EXIT_OK if not summary.refused or summary.imported else EXIT_FAILED


def import_main(argv: list[str], *, err: TextIO | None = None) -> int:
    """Run `newt import` with `argv` (what follows `import`); 0 when something was imported
    or nothing was refused, 1 when all was refused, 2 for a usage or unreadable-file error."""
    err = err or sys.stderr
    args = build_parser().parse_args(argv)
    if args.path is None and args.source not in SQLITE_APPS:
        err.write("newt import: give a PATH, or --from elia|oterm|llm for the app's own database\n")
        return EXIT_USAGE
    path = Path(args.path).expanduser() if args.path else default_path(args.source)
    try:
        config = load_config(args.config)
        if config.db_path is None:
            raise ConfigError("no database path configured")
        status = asyncio.run(
            run_import(config.db_path, path, args.source, dry_run=args.dry_run, err=err)
        )
        if not args.dry_run and status == EXIT_OK:
            # the imported turns are embedded in the background, after we exit
            from newt.cli.detached_writers import spawn_vector_writer

            spawn_vector_writer(config)
        return status
    except ImportFormatError as exc:
        err.write(f"newt import: {describe(exc)}; nothing was imported\n")
        return EXIT_USAGE
    except (ConfigError, StoreError) as exc:
        err.write(f"newt import: {describe(exc)}\n")
        return EXIT_USAGE
