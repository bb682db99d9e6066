"""Migration 14: a compaction record's recall text loses its owed part (the
quotes of removed user messages), on a database written before it."""

from __future__ import annotations

from pathlib import Path

from newt.memory.compaction import format_record, recall_text
from newt.store import Database, Store

SUMMARY = "The user planned a kayak trip."
OWED = (
    "No summary written yet: 4 message(s) were removed in 1 step(s). What the user said in them:\n"
    "- My sister lives in Tromsø now.\n- Where is the kayak?"
)


async def test_v13_summaries_lose_their_owed_part(tmp_path: Path) -> None:
    path = tmp_path / "newt.db"
    db = await Database.open(path, migrate=False)
    await db.migrate(target=13)
    conn = db.conn
    await conn.execute(
        "INSERT INTO conversations(id, title, created_at, updated_at) VALUES ('c1', 'old', 1, 2)"
    )
    rows = [
        (1, f"{SUMMARY}\n\n{OWED}"),  # a summary and an owed part
        (2, OWED),  # nothing summarized yet
        (3, f"{SUMMARY}\nSummary generation was unavailable. 2 message(s) were removed."),
        (4, SUMMARY),  # nothing owed
    ]
    for turn, body in rows:
        await conn.execute(
            "INSERT INTO turns(id, conversation_id, kind, user, assistant, status, created_at)"
            " VALUES (?, 'c1', 'compaction', ?, '', 'complete', 1000)",
            (turn, format_record(body)),
        )
        await conn.execute(
            "INSERT INTO memory_records(key, source, conversation_id, turn_id, content,"
            " created_at, said_at) VALUES (?, 'compaction', 'c1', ?, ?, 1000, 1000)",
            (f"c{turn}", turn, body),
        )
    await db.close()

    async with await Store.open(path) as store:
        cur = await store.db.conn.execute("SELECT key, content FROM memory_records ORDER BY key")
        got = {r[0]: r[1] for r in await cur.fetchall()}
        assert got == {"c1": SUMMARY, "c2": "", "c3": SUMMARY, "c4": SUMMARY}
        # what a new record gets indexed by is the same text
        assert [recall_text(format_record(body)) for _, body in rows] == list(got.values())
        # the quotes no longer find the summaries, the summary's own words do
        cur = await store.db.conn.execute(
            "SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'tromsø'"
        )
        assert (await cur.fetchone())[0] == 0
        cur = await store.db.conn.execute(
            "SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'kayak'"
        )
        assert (await cur.fetchone())[0] == 3
