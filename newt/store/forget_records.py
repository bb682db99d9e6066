"""Forgetting records by key, finding what a phrase would take, rewriting summaries.

A forgotten message becomes FORGOTTEN in its turn and in every fork's copy of
it (the log keeps its shape); a reply takes its reasoning and tool events
with it; a tool result leaves the turn's tool events; a title made from a
forgotten message goes too. Each forget ends with `scrub`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Sequence
from typing import Any

import aiosqlite

from newt.store.conversations import make_title
from newt.store.db import Database, fetch_all
from newt.store.forgotten import FORGOTTEN, FORGOTTEN_TITLE, Forgotten, parse_key
from newt.store.models import MemoryRecord
from newt.store.records import row_to_record
from newt.store.scrub import scrub


def _phrase(query: str) -> str:
    """The query as one FTS5 phrase: its words in order, quotes doubled."""
    words = re.findall(r"\w+", query)
    return '"' + " ".join(words) + '"' if words else ""


def _scrub_strings(value: Any, text: str) -> Any:
    """`value` (decoded JSON) with every string holding `text` replaced."""
    if isinstance(value, str):
        return FORGOTTEN if text and text in value else value
    if isinstance(value, list):
        return [_scrub_strings(v, text) for v in value]
    if isinstance(value, dict):
        return {k: _scrub_strings(v, text) for k, v in value.items()}
    return value


async def matching(db: Database, query: str, limit: int = 1000) -> list[MemoryRecord]:
    """Records holding the query's words as a phrase (stemmed, as the index
    reads them), newest first: what "forget every record matching" takes."""
    phrase = _phrase(query)
    if not phrase:
        return []
    rows = await fetch_all(
        db.conn,
        "SELECT r.* FROM memory_fts f JOIN memory_records r ON r.id = f.rowid"
        " WHERE memory_fts MATCH ? ORDER BY r.said_at DESC, r.id DESC LIMIT ?",
        (phrase, limit),
    )
    return [row_to_record(row) for row in rows]


async def compaction_rows(
    db: Database, conversations: Collection[str]
) -> list[tuple[int, str, str]]:
    """(row id, conversation id, record text) of every compaction row of
    these conversations, oldest first."""
    if not conversations:
        return []
    rows = await fetch_all(
        db.conn,
        "SELECT id, conversation_id, user FROM turns WHERE kind = 'compaction'"
        " AND conversation_id IN (SELECT value FROM json_each(?)) ORDER BY id",
        (json.dumps(sorted(conversations)),),
    )
    return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]


async def forget_keys(db: Database, keys: Iterable[str]) -> Forgotten:
    """Forget these records in one transaction: a note is removed; a user
    message or reply becomes FORGOTTEN in its turn and every copy (a reply
    takes its reasoning and tool events with it); a tool result leaves the
    turn's tool events; a summary record leaves the index (its row is
    rewritten by the caller). Unknown keys are skipped."""
    done = Forgotten()
    async with db.transaction() as conn:
        for key in keys:
            kind, ident, n = parse_key(key)
            if kind == "n":
                cur = await conn.execute(
                    "DELETE FROM notes WHERE id = ? RETURNING content", (ident,)
                )
                found = list(await cur.fetchall())
                await cur.close()
                done.notes += len(found)
                done.records += len(found)
                done.old_notes += [str(r[0]) for r in found]
                continue
            await _forget_turn_record(conn, key, kind, ident, n, done)
    done.scrubbed = await scrub(db)
    return done


async def _forget_turn_record(
    conn: aiosqlite.Connection,
    key: str,
    kind: str,
    root: int,
    n: int | None,
    done: Forgotten,
) -> None:
    cur = await conn.execute("DELETE FROM memory_records WHERE key = ? RETURNING content", (key,))
    removed = list(await cur.fetchall())
    await cur.close()
    done.records += len(removed)
    rows = await fetch_all(
        conn,
        "SELECT id, conversation_id, user, assistant, tool_events FROM turns"
        " WHERE id = ? OR copied_from = ?",
        (root, root),
    )
    if not rows:
        return
    done.touched |= {str(r[1]) for r in rows}
    original = next((r for r in rows if r[0] == root), rows[0])
    if kind == "c":
        return  # a summary's text is the caller's to rewrite (the memory layer's)
    if n is not None:  # a tool result: its text leaves every copy's tool events
        text = str(removed[0][0]).partition("\nResult: ")[2] if removed else ""
        for row in rows:
            events = _scrub_strings(json.loads(row[4] or "[]"), text)
            await conn.execute(
                "UPDATE turns SET tool_events = ? WHERE id = ?", (json.dumps(events), row[0])
            )
        done.old_texts += [text] if text else []
        return
    if kind == "t":
        old = str(original[2])
        await conn.execute(
            "UPDATE turns SET user = ?, attachments = '[]' WHERE id = ? OR copied_from = ?",
            (FORGOTTEN, root, root),
        )
        await _untitle(conn, {str(r[1]) for r in rows}, old)
    else:
        old = str(original[3])
        await conn.execute(
            "UPDATE turns SET assistant = ?, thinking = '', tool_events = '[]'"
            " WHERE id = ? OR copied_from = ?",
            (FORGOTTEN, root, root),
        )
        cur = await conn.execute(
            "DELETE FROM memory_records WHERE key LIKE ? RETURNING id", (f"t{root}.%",)
        )
        done.records += len(list(await cur.fetchall()))
        await cur.close()
    if old and old != FORGOTTEN:
        done.messages += 1
        done.old_texts.append(old)


async def _untitle(conn: aiosqlite.Connection, conversations: set[str], old: str) -> None:
    """A title made from a forgotten message goes with it: the conversation is
    titled from what remains (its first message still holding words), or
    FORGOTTEN_TITLE when nothing does."""
    made = make_title(old).rstrip("…")
    if not made:
        return
    rows = await fetch_all(
        conn,
        "SELECT id, title FROM conversations WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(conversations)),),
    )
    for conv_id, title in rows:
        if str(title).startswith(made):
            await conn.execute(
                "UPDATE conversations SET title = ? WHERE id = ?",
                (await _title_from_what_remains(conn, str(conv_id)), conv_id),
            )


async def _title_from_what_remains(conn: aiosqlite.Connection, conv_id: str) -> str:
    rows = await fetch_all(
        conn,
        "SELECT user FROM turns WHERE conversation_id = ? AND kind = 'turn'"
        " AND replaced_by IS NULL ORDER BY id",
        (conv_id,),
    )
    for (user,) in rows:
        left = " ".join(str(user).replace(FORGOTTEN, " ").split()).strip(" ,;.")
        if left:
            return make_title(str(user))
    return FORGOTTEN_TITLE


async def cut_record(db: Database, key: str, new: str, parts: Sequence[str]) -> Forgotten:
    """Forget only `parts` of a message or reply (t<turn> or r<turn>): its text
    becomes `new` (the rest of it, each cut marked) in its record, its turn and
    every fork's copy; the parts leave the reply's reasoning and tool events
    too, and a title made from the old message is made again from the new.
    The record's vector goes with its old text (a trigger) and is embedded
    again; the bytes are scrubbed as any forget's."""
    kind, root, n = parse_key(key)
    if kind not in ("t", "r") or n is not None:
        raise ValueError(f"only a message or a reply can be cut, not {key}")
    done = Forgotten()
    column = "user" if kind == "t" else "assistant"
    async with db.transaction() as conn:
        rows = await fetch_all(
            conn,
            f"SELECT id, conversation_id, {column}, thinking, tool_events FROM turns"
            " WHERE id = ? OR copied_from = ?",
            (root, root),
        )
        if not rows:
            return done
        original = next((r for r in rows if r[0] == root), rows[0])
        old = str(original[2])
        for row_id, _, _, thinking, events in rows:
            await conn.execute(
                f"UPDATE turns SET {column} = ?, thinking = ?, tool_events = ? WHERE id = ?",
                (new, _without(str(thinking), parts), _events_without(events, parts), row_id),
            )
        cur = await conn.execute(
            "UPDATE memory_records SET content = ? WHERE key = ? RETURNING id", (new, key)
        )
        done.records += len(list(await cur.fetchall()))
        await cur.close()
        done.touched |= {str(r[1]) for r in rows}
        if kind == "t":
            await _retitle(conn, done.touched, old, new)
    done.old_texts += [p for p in parts if p.strip()]
    done.scrubbed = await scrub(db)
    return done


def _without(text: str, parts: Sequence[str]) -> str:
    for part in parts:
        if part.strip():
            text = text.replace(part, FORGOTTEN)
    return text


def _events_without(events: object, parts: Sequence[str]) -> str:
    decoded = json.loads(str(events or "[]"))
    for part in parts:
        if part.strip():
            decoded = _replace_in(decoded, part)
    return json.dumps(decoded)


def _replace_in(value: Any, part: str) -> Any:
    if isinstance(value, str):
        return value.replace(part, FORGOTTEN)
    if isinstance(value, list):
        return [_replace_in(v, part) for v in value]
    if isinstance(value, dict):
        return {k: _replace_in(v, part) for k, v in value.items()}
    return value


async def _retitle(conn: aiosqlite.Connection, conversations: set[str], old: str, new: str) -> None:
    """A title made from a message that was cut is made again from what is left of it."""
    made = make_title(old).rstrip("…")
    if not made:
        return
    rows = await fetch_all(
        conn,
        "SELECT id, title FROM conversations WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(conversations)),),
    )
    for conv_id, title in rows:
        if str(title).startswith(made):
            await conn.execute(
                "UPDATE conversations SET title = ? WHERE id = ?", (make_title(new), conv_id)
            )


async def rewrite_compaction(db: Database, row_id: int, record: str, summary: str | None) -> None:
    """Replace a compaction row's text (and its forks' copies): with
    `summary` its recall record is re-indexed from it, without it the
    record leaves the index."""
    async with db.transaction() as conn:
        await conn.execute(
            "UPDATE turns SET user = ? WHERE id = ? OR copied_from = ?",
            (record, row_id, row_id),
        )
        cur = await conn.execute(
            "SELECT coalesce(copied_from, id) FROM turns WHERE id = ?", (row_id,)
        )
        root = await cur.fetchone()
        await cur.close()
        key = f"c{root[0] if root else row_id}"
        if summary is None:
            await conn.execute("DELETE FROM memory_records WHERE key = ?", (key,))
        else:
            await conn.execute(
                "UPDATE memory_records SET content = ? WHERE key = ?", (summary, key)
            )
