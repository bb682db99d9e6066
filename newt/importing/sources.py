"""Which reader reads a file: named with --from, or told apart by the file's content."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import newt.importing.chatgpt as chatgpt
import newt.importing.claude as claude
import newt.importing.newt_json as newt_json
import newt.importing.sqlite_apps as sqlite_apps
from newt.importing.model import ImportFormatError, Item

SOURCES: dict[str, Callable[[Path], Iterator[Item]]] = {
    "chatgpt": chatgpt.read,
    "claude": claude.read,
    "newt": newt_json.read,
    "elia": sqlite_apps.read_elia,
    "oterm": sqlite_apps.read_oterm,
    "llm": sqlite_apps.read_llm,
}
SQLITE_APPS = ("elia", "oterm", "llm")


def default_path(source: str) -> Path:
    """The app's own database path, for `--from elia|oterm|llm` without a PATH."""
    return sqlite_apps.default_path(source)


def detect(path: Path) -> str:
    """The source a file is from, by its content; ImportFormatError when none fits."""
    if not path.is_file():
        raise ImportFormatError(path, "no such file")
    with path.open("rb") as fh:
        head = fh.read(16)
    if head == b"SQLite format 3\x00":
        conn = sqlite_apps.open_read_only(path)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            cols = {r[1] for r in conn.execute("PRAGMA table_info(message)")}
        finally:
            conn.close()
        if "threads" in tables or "responses" in tables:
            return "llm"
        if {"chat", "message"} <= tables:
            return "oterm" if "author" in cols else "elia"
        raise ImportFormatError(path, "an SQLite database of no app newt knows (elia, oterm, llm)")
    try:
        data = chatgpt.load_json(path)
    except ImportFormatError:
        return "newt"  # perhaps JSONL; its reader says what is wrong
    first = data[0] if isinstance(data, list) and data else data
    if isinstance(first, dict):
        if "mapping" in first:
            return "chatgpt"
        if "chat_messages" in first:
            return "claude"
        if "turns" in first:
            return "newt"
    raise ImportFormatError(
        path, "not an export newt knows (ChatGPT, Claude, newt JSON/JSONL, elia, oterm, llm)"
    )


def read_source(path: Path, source: str | None = None) -> tuple[str, Iterator[Item]]:
    """(source, its conversations) of `path`; a whole-file problem raises ImportFormatError
    when iterated or here."""
    name = source or detect(path)
    if name not in SOURCES:
        raise ImportFormatError(path, f"unknown source {name!r}")
    return name, SOURCES[name](path)
