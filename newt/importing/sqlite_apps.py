"""Elia, oterm and simonw's `llm`: their SQLite databases, read-only, where each app keeps it."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

from newt.importing.model import (
    ImportedConversation,
    ImportFormatError,
    Item,
    Refused,
    pair_messages,
    parse_time,
    reference,
)


def _data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def _llm_dir() -> Path:
    if os.environ.get("LLM_USER_PATH"):
        return Path(os.environ["LLM_USER_PATH"])
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "io.datasette.llm"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", Path.home())) / "io.datasette.llm"
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return config / "io.datasette.llm"  # click.get_app_dir, as `llm logs path` says


def _oterm_dir() -> Path:
    if os.environ.get("OTERM_DATA_DIR"):
        return Path(os.environ["OTERM_DATA_DIR"])
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "oterm"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", Path.home())) / "oterm"
    return _data_home() / "oterm"


def default_path(source: str) -> Path:
    """Where the app keeps its database on this platform (its own environment variables too)."""
    if source == "elia":
        return _data_home() / "elia" / "elia.sqlite"
    if source == "oterm":
        return _oterm_dir() / "store.db"
    if source == "llm":
        return _llm_dir() / "logs.db"
    raise KeyError(source)


def open_read_only(path: Path) -> sqlite3.Connection:
    """The app's database opened `mode=ro`: newt never writes another app's file."""
    if not path.is_file():
        raise ImportFormatError(path, "no such file")
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise ImportFormatError(path, f"not an SQLite database ({exc})") from None
    return conn


Messages = list[tuple[str, str, float, tuple[str, ...]]]
Found = dict[str, tuple[str, Messages]]


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _need(path: Path, conn: sqlite3.Connection, app: str, tables: set[str]) -> None:
    missing = tables - _tables(conn)
    if missing:
        names = ", ".join(sorted(missing))
        raise ImportFormatError(path, f"not an {app} database (no table {names})")


def read_elia(path: Path) -> Iterator[Item]:
    """Elia's `chat` and `message` tables (elia-chat 1.x, times naive UTC)."""
    conn = open_read_only(path)
    try:
        _need(path, conn, "Elia", {"chat", "message"})
        try:
            chats = conn.execute(
                "SELECT id, model, title, started_at FROM chat ORDER BY id"
            ).fetchall()
        except sqlite3.DatabaseError as exc:
            raise ImportFormatError(path, f"unexpected Elia schema ({exc})") from None
        for chat in chats:
            try:
                rows = conn.execute(
                    "SELECT role, content, timestamp FROM message WHERE chat_id = ? ORDER BY id",
                    (chat["id"],),
                ).fetchall()
                started = parse_time(chat["started_at"], where="chat.started_at")
                msgs = [
                    (
                        r["role"],
                        r["content"],
                        parse_time(r["timestamp"], where="message.timestamp")
                        if r["timestamp"]
                        else started,
                        (),
                    )
                    for r in rows
                ]
                created = min([started, *(m[2] for m in msgs)])
                yield ImportedConversation(
                    "elia",
                    str(chat["id"]),
                    chat["title"] or "",
                    created,
                    pair_messages(msgs),
                    model=chat["model"] or "",
                )
            except (ValueError, TypeError, sqlite3.DatabaseError) as exc:
                yield Refused(str(chat["id"]), f"chat {chat['id']}: {exc}")
    finally:
        conn.close()


def read_oterm(path: Path) -> Iterator[Item]:
    """oterm's `chat` and `message` tables. oterm keeps no times: every turn is dated
    when the database file was last written, the nearest thing to a date it has."""
    conn = open_read_only(path)
    try:
        _need(path, conn, "oterm", {"chat", "message"})
        when = path.stat().st_mtime
        try:
            chats = conn.execute("SELECT id, name, model FROM chat ORDER BY id").fetchall()
        except sqlite3.DatabaseError as exc:
            raise ImportFormatError(path, f"unexpected oterm schema ({exc})") from None
        for chat in chats:
            try:
                rows = conn.execute(
                    "SELECT author, text, images FROM message WHERE chat_id = ? ORDER BY id",
                    (chat["id"],),
                ).fetchall()
                msgs = []
                for r in rows:
                    images = json.loads(r["images"] or "[]")
                    refs = tuple(
                        reference("image", f"image {n + 1}", f"{len(b) * 3 // 4} bytes")
                        for n, b in enumerate(images)
                    )
                    msgs.append((r["author"], r["text"], when, refs))
                yield ImportedConversation(
                    "oterm",
                    str(chat["id"]),
                    chat["name"] or "",
                    when,
                    pair_messages(msgs),
                    model=chat["model"] or "",
                )
            except (ValueError, TypeError, sqlite3.DatabaseError) as exc:
                yield Refused(str(chat["id"]), f"chat {chat['id']}: {exc}")
    finally:
        conn.close()


def _llm_threads(conn: sqlite3.Connection) -> Found:
    """llm 0.36's message store: each thread's branch from its tip back to the root (the
    branch last seen), each message dated by the first turn that sent or answered it,
    the text in `parts` (or the fragment it borrows)."""
    found: Found = {}
    if "threads" not in _tables(conn):
        return found
    for thread in conn.execute(
        "SELECT id, name, tip_message_hash, datetime_utc FROM threads ORDER BY datetime_utc, id"
    ).fetchall():
        dated: dict[str, float] = {}
        for turn in conn.execute(
            "SELECT parent_message_hash, tip_message_hash, datetime_utc FROM turns"
            " WHERE thread_id = ?",
            (thread["id"],),
        ):
            said = parse_time(turn["datetime_utc"], where="turns.datetime_utc")
            for node in (turn["parent_message_hash"], turn["tip_message_hash"]):
                if node is not None:
                    dated[node] = min(dated.get(node, said), said)
        chain: list[sqlite3.Row] = []
        node = thread["tip_message_hash"]
        while node is not None:
            row = conn.execute(
                "SELECT hash, parent_hash, role FROM messages WHERE hash = ?", (node,)
            ).fetchone()
            if row is None or len(chain) > 1_000_000:
                raise ValueError(f"message {node} is missing")
            chain.append(row)
            node = row["parent_hash"]
        when = parse_time(thread["datetime_utc"], where="threads.datetime_utc")
        msgs: Messages = []
        for row in reversed(chain):
            when = dated.get(row["hash"], when)
            texts: list[str] = []
            refs: list[str] = []
            for part in conn.execute(
                "SELECT p.id, p.type, p.text, (SELECT f.content FROM part_fragments pf"
                " JOIN fragments f ON f.id = pf.fragment_id WHERE pf.part_id = p.id"
                ' ORDER BY pf."order" LIMIT 1) AS fragment'
                " FROM parts p WHERE p.message_hash = ? ORDER BY position",
                (row["hash"],),
            ):
                if part["type"] == "text":
                    texts.append(part["text"] or part["fragment"] or "")
                elif part["type"] == "attachment":
                    refs.append(reference("attachment", f"part {part['id']}"))
            msgs.append((row["role"], "\n".join(texts), when, tuple(refs)))
        found[thread["id"]] = (thread["name"] or "", msgs)
    return found


def _llm_legacy(conn: sqlite3.Connection) -> Found:
    """Older llm releases: `responses` (prompt, response, datetime_utc) by `conversation_id`."""
    found: Found = {}
    if "responses" not in _tables(conn):
        return found
    names = (
        {r["id"]: r["name"] or "" for r in conn.execute("SELECT id, name FROM conversations")}
        if "conversations" in _tables(conn)
        else {}
    )
    for r in conn.execute(
        "SELECT id, conversation_id, prompt, response, datetime_utc FROM responses"
        " ORDER BY datetime_utc, rowid"
    ):
        key = r["conversation_id"] or r["id"]
        said = parse_time(r["datetime_utc"], where="responses.datetime_utc")
        entry = found.setdefault(key, (names.get(key, ""), []))
        entry[1].append(("user", r["prompt"] or "", said, ()))
        entry[1].append(("assistant", r["response"] or "", said, ()))
    return found


def read_llm(path: Path) -> Iterator[Item]:
    """`llm`'s logs.db: the message store of current releases and the `responses` of older
    ones (a conversation begun before an upgrade has its older turns there, newer ones in a
    thread of the same id)."""
    conn = open_read_only(path)
    try:
        if not {"responses", "threads"} & _tables(conn):
            raise ImportFormatError(path, "not an llm logs database (no responses or threads)")
        try:
            legacy = _llm_legacy(conn)
            threads = _llm_threads(conn)
        except (ValueError, sqlite3.DatabaseError) as exc:
            raise ImportFormatError(path, f"unexpected llm schema ({exc})") from None
        for key in dict.fromkeys([*legacy, *threads]):
            old_name, old = legacy.get(key, ("", []))
            new_name, new = threads.get(key, ("", []))
            msgs = old + new
            if not msgs:
                continue
            title = old_name or new_name
            yield ImportedConversation("llm", key, title, msgs[0][2], pair_messages(msgs))
    finally:
        conn.close()
