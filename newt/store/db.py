"""The one long-lived aiosqlite connection and the migration runner.

An unclosed aiosqlite connection keeps a non-daemon thread alive and hangs the
process at exit, so `Database` is an async context manager and every caller
closes it.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import TypeVar

import aiosqlite

from newt.files import create_private_file, ensure_private_dir
from newt.store.errors import (
    DatabaseBusyError,
    DatabaseTooNewError,
    NotADatabaseError,
    StoreError,
)
from newt.store.migrations import MIGRATIONS, SCHEMA_VERSION

T = TypeVar("T")

SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 5000
"""SQLite's own wait for a lock, inside each statement."""
LOCK_WAIT_S = 30.0
"""The longest newt waits, in all, for another process's write lock before giving up."""
_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


async def fetch_all(
    conn: aiosqlite.Connection, sql: str, params: Sequence[object] = ()
) -> list[aiosqlite.Row]:
    """Every row of one statement, as a list."""
    return list(await conn.execute_fetchall(sql, params))


def is_busy(exc: sqlite3.OperationalError) -> bool:
    """True when `exc` means "someone else holds the lock" (worth waiting for)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _BUSY_CODES  # extended codes such as SQLITE_BUSY_SNAPSHOT too
    return "locked" in str(exc)


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
        # When rows are stamped as written. An importer or a benchmark replaying
        # a dated conversation sets it, so "when was this said" keeps the real day.
        self.clock: Callable[[], float] = time.time

    @classmethod
    async def open(cls, path: Path | str, *, migrate: bool = True) -> Database:
        path = Path(path)
        if str(path) != ":memory:":
            ensure_private_dir(path.parent)
            _check_header(path)
            # Made here, 0600, so SQLite (which copies the database's mode to
            # its -wal and -shm files) never creates it world-readable.
            create_private_file(path)
        # `timeout` is SQLite's busy timeout, set by connect() itself: it is in
        # force before the first statement, so no statement can fail at once
        # with "database is locked" while another process holds the lock.
        conn = await aiosqlite.connect(
            str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000
        )
        db = cls(path, conn)
        try:
            await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.row_factory = aiosqlite.Row
            await conn.execute("PRAGMA foreign_keys = ON")
            # What is deleted or overwritten is zeroed in the file, not left in
            # free space: forgetting must reach the bytes (newt.store.forget).
            await conn.execute("PRAGMA secure_delete = ON")
            # Switching a fresh file to WAL needs an exclusive lock, and SQLite
            # can report a conflict there without waiting: retry, bounded.
            await db.retry_busy(lambda: conn.execute("PRAGMA journal_mode = WAL"))
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

    async def retry_busy(self, statement: Callable[[], Awaitable[T]]) -> T:
        """Run `statement`, again and again while the database is locked by someone else.

        SQLite already waits BUSY_TIMEOUT_MS inside each attempt; this outer
        loop covers the cases where it does not (a journal-mode switch) and a
        writer that holds the lock longer than that. After LOCK_WAIT_S in all
        it gives up with DatabaseBusyError.
        """
        deadline = time.monotonic() + LOCK_WAIT_S
        pause = 0.02
        while True:
            try:
                return await statement()
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise
                if time.monotonic() + pause > deadline:
                    raise DatabaseBusyError(self.path, LOCK_WAIT_S) from exc
            # jitter, so two waiting processes do not retry in lockstep
            await asyncio.sleep(pause * random.uniform(0.5, 1.5))
            pause = min(pause * 2, 0.5)

    @asynccontextmanager
    async def transaction(self, *, exclusive: bool = False) -> AsyncIterator[aiosqlite.Connection]:
        """BEGIN IMMEDIATE (or EXCLUSIVE) ... COMMIT, rolled back on any error.

        Serialised with a lock because every task shares this one connection.
        The write lock is taken at BEGIN, so a busy database shows up there (and
        is waited for) before any work is done; COMMIT is retried the same way
        (after a busy COMMIT the transaction is still open and can commit).
        """
        begin = "BEGIN EXCLUSIVE" if exclusive else "BEGIN IMMEDIATE"
        async with self._tx_lock:
            try:
                await self.retry_busy(lambda: self.conn.execute(begin))
                yield self.conn
                await self.retry_busy(lambda: self.conn.execute("COMMIT"))
            except BaseException:
                await self._rollback()
                raise

    async def _rollback(self) -> None:
        """Undo the open transaction, if there is one.

        Always sent, never decided by `in_transaction`: a cancelled await does
        not stop its statement in the connection's thread, so a BEGIN (or
        COMMIT) may still be about to run. The connection runs statements in
        order, so this ROLLBACK comes after it and sees the final state; when
        nothing is open SQLite says so, and that is fine.
        """
        try:
            await asyncio.shield(self.conn.execute("ROLLBACK"))
        except sqlite3.OperationalError as exc:
            if "no transaction is active" not in str(exc):
                raise
        except ValueError:  # the connection is already closed: nothing to undo
            pass

    async def schema_version(self) -> int:
        cur = await self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name='schema_migrations'"
        )
        if await cur.fetchone() is None:
            return 0
        cur = await self.conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
        row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def _missing(self, target: int) -> list[int]:
        """Versions up to `target` not recorded as applied. Not just those above
        the newest: migrations merged out of order (7 landing after 8) leave a
        gap in a database the later one already migrated."""
        if await self.schema_version() == 0:
            return [v for v, _, _ in MIGRATIONS if v <= target]
        cur = await self.conn.execute("SELECT version FROM schema_migrations")
        applied = {int(r[0]) for r in await cur.fetchall()}
        return [v for v, _, _ in MIGRATIONS if v <= target and v not in applied]

    async def migrate(self, target: int = SCHEMA_VERSION) -> None:
        """Apply every migration up to `target` that is not recorded yet.

        Another newt may be migrating the same file right now. What is missing
        is therefore read again inside an exclusive write lock, and only that
        is applied; the read outside the lock only lets an up-to-date database
        skip taking the lock.
        """
        current = await self.schema_version()
        if current > SCHEMA_VERSION:
            raise DatabaseTooNewError(self.path, current, SCHEMA_VERSION)
        if not await self._missing(target):
            return
        async with self.transaction(exclusive=True) as conn:
            current = await self.schema_version()
            if current > SCHEMA_VERSION:
                raise DatabaseTooNewError(self.path, current, SCHEMA_VERSION)
            missing = set(await self._missing(target))
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
            )
            for version, name, fn in MIGRATIONS:
                if version in missing:
                    await fn(conn)
                    await conn.execute(
                        "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
                        (version, name, time.time()),
                    )
