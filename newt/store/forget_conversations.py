"""Forgetting whole conversations: one deleted, one taken out of memory, or everything.

A fork of a deleted conversation keeps its own copies and the recall records
they share: those are handed to the fork's oldest copy first.
"""

from __future__ import annotations

import json

import aiosqlite

from newt.store.db import Database, fetch_all
from newt.store.forget_events import scrub_tool_events
from newt.store.forgotten import SHOWN_MESSAGES, Forgotten
from newt.store.scrub import scrub


async def delete_conversation(db: Database, conv_id: str) -> Forgotten:
    """Delete a conversation with its turns, records, vectors, settings,
    compaction records and the notes made in it; a fork of it keeps its
    own copies and the recall records they share."""
    done = Forgotten()
    said = {int(r[0]): str(r[1]) for r in await fetch_all(
        db.conn, "SELECT id, content FROM memory_records WHERE conversation_id = ?", (conv_id,)
    )}  # fmt: skip
    async with db.transaction() as conn:
        await _hand_to_forks(conn, conv_id)
        counted = await fetch_all(
            conn,
            "SELECT (SELECT count(*) FROM memory_records WHERE conversation_id = ?),"
            " (SELECT count(*) FROM notes WHERE conversation_id = ?),"
            f" (SELECT {SHOWN_MESSAGES} FROM turns t WHERE t.conversation_id = ?"
            " AND t.kind = 'turn' AND t.replaced_by IS NULL)",
            (conv_id, conv_id, conv_id),
        )
        records, notes, messages = counted[0]
        await conn.execute(
            "UPDATE conversations SET parent_id = NULL WHERE parent_id = ?", (conv_id,)
        )
        cur = await conn.execute("DELETE FROM conversations WHERE id = ? RETURNING id", (conv_id,))
        deleted = list(await cur.fetchall())
        await cur.close()
    if not deleted:
        raise KeyError(conv_id)
    done.records, done.notes, done.messages = int(records), int(notes), int(messages)
    done.conversations = 1
    # what other conversations' tool calls quoted of it goes too (a fork's
    # records, handed over above, stay: the fork still says them)
    kept = await fetch_all(
        db.conn,
        "SELECT id FROM memory_records WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(said)),),
    )
    gone = set(said) - {int(r[0]) for r in kept}
    await scrub_tool_events(db, [said[i] for i in gone])
    done.scrubbed = await scrub(db)
    return done


async def drop_index(db: Database, conv_id: str) -> Forgotten:
    """Take a conversation's words out of memory, keeping its log (it was
    just made incognito): its records and their vectors go, a fork keeps
    the ones it shares."""
    done = Forgotten()
    async with db.transaction() as conn:
        await _hand_to_forks(conn, conv_id)
        cur = await conn.execute(
            "DELETE FROM memory_records WHERE conversation_id = ? RETURNING id", (conv_id,)
        )
        done.records = len(list(await cur.fetchall()))
        await cur.close()
    done.scrubbed = await scrub(db)
    return done


async def forget_everything(db: Database) -> Forgotten:
    """Every conversation, note, record and vector (the model facts newt
    measured stay: they hold no words of the user's)."""
    done = Forgotten()
    async with db.transaction() as conn:
        counted = await fetch_all(
            conn,
            "SELECT (SELECT count(*) FROM memory_records), (SELECT count(*) FROM notes),"
            " (SELECT count(*) FROM conversations),"
            f" (SELECT {SHOWN_MESSAGES} FROM turns t WHERE t.kind = 'turn'"
            " AND t.replaced_by IS NULL)",
        )
        done.records, done.notes, done.conversations, done.messages = map(int, counted[0])
        await conn.execute("DELETE FROM conversations")
        await conn.execute("DELETE FROM notes")
        await conn.execute("DELETE FROM memory_records")
    done.scrubbed = await scrub(db)
    return done


async def _hand_to_forks(conn: aiosqlite.Connection, conv_id: str) -> None:
    """Records rooted in `conv_id` that a fork's copies share move to the
    oldest copy (renamed to its id), which becomes the root of the others."""
    roots = await fetch_all(
        conn,
        "SELECT t.id, (SELECT min(c.id) FROM turns c WHERE c.copied_from = t.id"
        " AND c.conversation_id != t.conversation_id) FROM turns t"
        " WHERE t.conversation_id = ? AND t.copied_from IS NULL",
        (conv_id,),
    )
    for root, heir in roots:
        if heir is None:
            continue
        await conn.execute("UPDATE turns SET copied_from = NULL WHERE id = ?", (heir,))
        await conn.execute("UPDATE turns SET copied_from = ? WHERE copied_from = ?", (heir, root))
        await conn.execute(
            "UPDATE memory_records SET turn_id = ?,"
            " conversation_id = (SELECT conversation_id FROM turns WHERE id = ?),"
            " key = substr(key, 1, 1) || ? || substr(key, ?) WHERE turn_id = ?",
            (heir, heir, str(heir), 2 + len(str(root)), root),
        )
