"""Replacing a turn (regenerate, edit) and forking a conversation, in the store.

The log stays append-only in spirit: a replaced turn is kept, marked with the
id of the turn that replaced it, and only its recall record goes (recall must
never bring back words the conversation no longer holds). A fork copies rows
into a new conversation; the copies point at the original turn (`copied_from`)
and share its recall record, so the index holds every fact once.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Sequence

import aiosqlite

from newt.store.db import Database
from newt.store.live_log import fork_rows
from newt.store.models import Conversation, StoredTurn


async def mark_replaced(conn: aiosqlite.Connection, old_id: int, new_id: int) -> None:
    """Inside the caller's transaction: `old_id` is replaced by `new_id`; its
    recall records go unless a live copy (fork) or original still holds them."""
    cur = await conn.execute(
        "UPDATE turns SET replaced_by = ? WHERE id = ? AND replaced_by IS NULL"
        " RETURNING coalesce(copied_from, id)",
        (new_id, old_id),
    )
    row = await cur.fetchone()
    await cur.close()
    if row is None:
        return
    root = int(row[0])
    cur = await conn.execute(
        "SELECT 1 FROM turns WHERE (id = ? OR copied_from = ?) AND replaced_by IS NULL"
        " AND kind = 'turn' LIMIT 1",
        (root, root),
    )
    shared = await cur.fetchone()
    await cur.close()
    if shared is None:
        await conn.execute(
            "DELETE FROM memory_records WHERE key IN (?, ?) OR key LIKE ?",
            (f"t{root}", f"r{root}", f"t{root}.%"),
        )


_FORK_SUFFIX = re.compile(r" \(fork(?: (\d+))?\)$")


def fork_title(title: str) -> str:
    """The title of a fork of `title`: "Trip (fork)", then "Trip (fork 2)" for a
    fork of that fork, and so on. Why: in /resume and the header a fork must
    not look like its original (an empty title stays empty: the first message
    titles it)."""
    if not title:
        return title
    found = _FORK_SUFFIX.search(title)
    if found is None:
        return f"{title} (fork)"
    n = int(found.group(1) or 1) + 1
    return f"{title[: found.start()]} (fork {n})"


async def fork_conversation(
    db: Database, source: Conversation, rows: Sequence[StoredTurn], at_turn: int
) -> Conversation:
    """A new conversation holding copies of `source`'s log `rows` up to turn
    `at_turn` (the caller holds the source's writer lock, so `rows` is current)."""
    if not any(r.id == at_turn and r.kind == "turn" for r in rows):
        raise KeyError(f"no turn {at_turn} in conversation {source.id}")
    now = time.time()
    conv_id = uuid.uuid4().hex
    title = fork_title(source.title)
    async with db.transaction() as conn:
        await conn.execute(
            "INSERT INTO conversations(id, title, model, base_url, created_at, updated_at,"
            " parent_id, forked_at, incognito) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                conv_id,
                title,
                source.model,
                source.base_url,
                now,
                now,
                source.id,
                at_turn,
                int(source.incognito),
            ),
        )
        new_ids: dict[int, int] = {}  # original row id -> its copy's
        for row in fork_rows(rows, at_turn):
            cur = await conn.execute(
                "INSERT INTO turns(conversation_id, kind, status, user, assistant, tokens_in,"
                " tokens_out, resident_turns, used_after, tool_events, error, created_at,"
                " copied_from, attachments, thinking, prompt_tokens, completion_tokens,"
                " reply_seconds, tokens_estimated, stopped_for_length)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _copy_values(conv_id, row),
            )
            assert cur.lastrowid is not None
            new_ids[row.id] = cur.lastrowid
        await _copy_settings(conn, source.id, conv_id, new_ids, now)
    return Conversation(
        conv_id,
        title,
        source.model,
        source.base_url,
        now,
        now,
        0,
        parent_id=source.id,
        parent_title=source.title,
        incognito=source.incognito,
    )


async def _copy_settings(
    conn: aiosqlite.Connection, source: str, fork: str, new_ids: dict[int, int], now: float
) -> None:
    """The fork keeps its parent's settings (migration 8): the copied turns were
    measured with that system prompt. A pending anchor shift stays tied to the
    same point of the log, renumbered to the copies."""
    cur = await conn.execute(
        "SELECT shift_after FROM conversation_settings WHERE conversation_id = ?", (source,)
    )
    row = await cur.fetchone()
    await cur.close()
    if row is None:
        return
    shift_after = row[0]
    if shift_after is not None:
        before = [new for old, new in new_ids.items() if old <= shift_after]
        shift_after = max(before, default=0)
    await conn.execute(
        "INSERT INTO conversation_settings(conversation_id, system_prompt, temperature, top_p,"
        " max_tokens, preset, anchor_shift, shift_after, updated_at)"
        " SELECT ?, system_prompt, temperature, top_p, max_tokens, preset, anchor_shift, ?, ?"
        " FROM conversation_settings WHERE conversation_id = ?",
        (fork, shift_after, now, source),
    )


def _copy_values(conv_id: str, row: StoredTurn) -> tuple[object, ...]:
    return (
        conv_id,
        row.kind,
        row.status,
        row.user,
        row.assistant,
        row.tokens_in,
        row.tokens_out,
        row.resident_turns,
        row.used_after,
        json.dumps(row.tool_events),
        row.error,
        row.created_at,
        row.copied_from or row.id,
        json.dumps(row.attachments),
        row.thinking,
        row.prompt_tokens,
        row.completion_tokens,
        row.reply_seconds,
        int(row.tokens_estimated),
        int(row.stopped_for_length),
    )
