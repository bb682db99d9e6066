"""Importing other apps' history into the open session's store (the TUI's import).

Contract: `found_databases()` lists the Elia, oterm and llm databases present at
their default paths; `import_history(store, recall_parts, path)` reads the whole file in a
thread (a malformed file raises ImportFormatError there, before anything is
written), then writes it with the same writer as `newt import`, one transaction
per conversation, reporting (done, total, turns) after each; the summary's lines
are the CLI's own. The imported turns are then handed to the embedding queue.
Why here: the UI may import the agent layer only, never newt.importing or the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from newt.importing import ImportFormatError, ImportSummary, import_conversations, read_source
from newt.importing.model import Item
from newt.importing.sources import SQLITE_APPS, default_path
from newt.recall.service import RecallParts
from newt.store import Store

ImportProgress = Callable[[int, int, int], None]
"""(conversations done, conversations in the file, turns written so far)."""

APP_NAMES = {"elia": "Elia", "oterm": "oterm", "llm": "llm"}

__all__ = [
    "FoundDatabase",
    "ImportFormatError",
    "ImportProgress",
    "ImportReport",
    "found_databases",
    "import_history",
]


@dataclass(frozen=True)
class FoundDatabase:
    source: str
    path: Path

    @property
    def app(self) -> str:
        return APP_NAMES.get(self.source, self.source)


@dataclass(frozen=True)
class ImportReport:
    source: str
    path: Path
    summary: ImportSummary

    def lines(self) -> list[str]:
        """The summary `newt import` prints for the same file."""
        return self.summary.report(self.source)


def found_databases() -> list[FoundDatabase]:
    """The apps' databases that exist where each app keeps it (env variables honoured)."""
    found = []
    for source in SQLITE_APPS:
        path = default_path(source)
        if path.is_file():
            found.append(FoundDatabase(source, path))
    return found


def _read_all(path: Path, source: str | None) -> tuple[str, list[Item]]:
    name, items = read_source(path, source)
    return name, list(items)  # a whole-file problem raises here, before any write


async def import_history(
    store: Store,
    recall_parts: RecallParts,
    path: Path,
    *,
    source: str | None = None,
    progress: ImportProgress | None = None,
) -> ImportReport:
    """Import `path` into `store`, its records queued for `recall_parts` to
    embed (ChatSession.import_history); the screen stays live: the file is parsed
    in a thread and the writer yields between conversations."""
    name, items = await asyncio.to_thread(_read_all, path, source)
    total = len(items)

    def step(done: int, turns: int) -> None:
        if progress is not None:
            progress(done, total, turns)

    summary = await import_conversations(store, items, progress=step)
    if summary.imported:
        recall_parts.stored()  # embedded in the background, like any stored turn
    return ImportReport(name, path, summary)
