"""After a forget: no byte of what went may stay in the index or the WAL.

`PRAGMA secure_delete = ON` (newt.store.db) zeroes what a statement deletes;
this merges the FTS5 index (`optimize`), so no older segment still lists the
words, and truncates the WAL, so no older copy of a page survives in
`newt.db-wal`.
"""

from __future__ import annotations

import asyncio

from newt.store.db import Database, fetch_all

CHECKPOINT_TRIES = 25
"""Tries (0.1 s apart) to truncate the WAL while another newt reads the database."""


async def scrub(db: Database) -> bool:
    """Merge the FTS5 index and truncate the WAL; False when another
    connection kept the WAL in use (it is truncated when that one lets go)."""
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')")
    for _ in range(CHECKPOINT_TRIES):
        async with db._tx_lock:  # no transaction of ours may be open
            rows = await fetch_all(db.conn, "PRAGMA wal_checkpoint(TRUNCATE)")
        if not rows or int(rows[0][0]) == 0:
            return True
        await asyncio.sleep(0.1)
    return False
