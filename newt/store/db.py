"""The one long-lived aiosqlite connection and the migration runner.

An unclosed aiosqlite connection keeps a non-daemon thread alive and hangs the
process at exit, so `Database` is an async context manager and every caller
closes it.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType

import aiosqlite

from newt.store.errors import DatabaseTooNewError, NotADatabaseError, StoreError
from newt.store.migrations import MIGRATIONS, SCHEMA_VERSION

SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 5000


def _check_header(path: Path) -> None:
    """Refuse a non-empty file that is not SQLite before SQLite can touch it."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb") as fh:
        head = fh.read(len(SQLITE_HEADER))
    if head != SQLITE_HEADER:
        raise NotADatabaseError(path)


class Database:
    """Owner of the connection. Use `async with await Database.open(path)`."""

    def __init__(self, path: Path, conn: aiosqlite.Connection) -> None:
        self.path = path
        self.conn = conn
        self._tx_lock = asyncio.Lock()
        self._closed = False

    @classmethod
    async def open(cls, path: Path | str, *, migrate: bool = True) -> Database:
        path = Path(path)
        if str(path) != ":memory:":
            path.parent.mkdir(parents=True, exist_ok=True)
            _check_header(path)
        conn = await aiosqlite.connect(str(path), isolation_level=None)
        db = cls(path, conn)
        try:
            conn.row_factory = aiosqlite.Row
            await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            await conn.execute("PRAGMA foreign_keys = ON")
            await conn.execute("PRAGMA journal_mode = WAL")
            await conn.execute("PRAGMA synchronous = NORMAL")
            if migrate:
                await db.migrate()
        except sqlite3.DatabaseError as exc:
            await db.close()
            if "not a database" in str(exc) or "malformed" in str(exc):
                raise NotADatabaseError(path) from exc
            raise StoreError(f"cannot open {path}: {exc}") from exc
        except BaseException:
            await db.close()
            raise
        return db

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self.conn.close()

    async def __aenter__(self) -> Database:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any error.

        Serialised with a lock because every task shares this one connection.
        """
        async with self._tx_lock:
            await self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                await self.conn.execute("ROLLBACK")
                raise
            else:
                await self.conn.execute("COMMIT")

    async def schema_version(self) -> int:
        cur = await self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name='schema_migrations'"
        )
        if await cur.fetchone() is None:
            return 0
        cur = await self.conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
        row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def migrate(self, target: int = SCHEMA_VERSION) -> None:
        """Apply every migration above the recorded version, up to `target`."""
        current = await self.schema_version()
        if current > SCHEMA_VERSION:
            raise DatabaseTooNewError(self.path, current, SCHEMA_VERSION)
        async with self.transaction() as conn:
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
            )
            for version, name, fn in MIGRATIONS:
                if current < version <= target:
                    await fn(conn)
                    await conn.execute(
                        "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
                        (version, name, time.time()),
                    )
