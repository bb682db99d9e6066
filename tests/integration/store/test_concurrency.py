"""Several newts on one database: migrations, locks held by others, many `newt -p` at once.

The in-process tests hold SQLite's lock from a second, plain sqlite3
connection (SQLite locks between connections exactly as between processes);
the last tests start real `newt -p` processes against the fake server.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

import newt.store.db as dbmod
from benchmarks.concurrent_prints import run_round, stored_prompts
from newt.store import SCHEMA_VERSION, Database, DatabaseBusyError, Store
from newt.store.migrations import MIGRATIONS
from tests.support.fake_openai import FakeOpenAI, Reply


def _hold_lock(path: Path, begin: str, seconds: float) -> tuple[threading.Event, threading.Thread]:
    """Another connection takes the write lock with `begin` and keeps it `seconds`."""
    taken = threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute(begin)
            taken.set()
            threading.Event().wait(seconds)
            conn.execute("COMMIT")
        finally:
            conn.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert taken.wait(5)
    return taken, thread


async def test_two_opens_of_a_fresh_database_migrate_it_once(tmp_path: Path) -> None:
    for n in range(5):
        path = tmp_path / f"newt{n}.db"
        first, second = await asyncio.gather(Database.open(path), Database.open(path))
        try:
            for db in (first, second):
                assert await db.schema_version() == SCHEMA_VERSION
            cur = await first.conn.execute("SELECT version FROM schema_migrations ORDER BY 1")
            assert [r[0] for r in await cur.fetchall()] == [v for v, _, _ in MIGRATIONS]
        finally:
            await first.close()
            await second.close()


async def test_the_version_is_read_inside_the_migration_lock(tmp_path: Path) -> None:
    """Both read version 0 before either migrates: the second must not migrate again."""
    path = tmp_path / "newt.db"
    first = await Database.open(path, migrate=False)
    second = await Database.open(path, migrate=False)
    try:
        assert await first.schema_version() == 0 and await second.schema_version() == 0
        await asyncio.gather(first.migrate(), second.migrate())
        assert await second.schema_version() == SCHEMA_VERSION
        cur = await second.conn.execute("SELECT COUNT(*) FROM schema_migrations")
        assert (await cur.fetchone())[0] == len(MIGRATIONS)
    finally:
        await first.close()
        await second.close()


async def test_open_waits_out_a_lock_held_past_the_busy_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dbmod, "BUSY_TIMEOUT_MS", 50)
    path = tmp_path / "newt.db"
    # a fresh file, locked by someone else: the switch to WAL and the migrations must wait
    _taken, holder = _hold_lock(path, "BEGIN EXCLUSIVE", 0.8)
    try:
        async with await Store.open(path) as store:
            assert await store.db.schema_version() == SCHEMA_VERSION
            cur = await store.db.conn.execute("PRAGMA journal_mode")
            assert (await cur.fetchone())[0] == "wal"
    finally:
        holder.join()


async def test_open_gives_up_after_a_bounded_wait_with_a_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dbmod, "BUSY_TIMEOUT_MS", 50)
    monkeypatch.setattr(dbmod, "LOCK_WAIT_S", 0.3)
    path = tmp_path / "newt.db"
    _taken, holder = _hold_lock(path, "BEGIN EXCLUSIVE", 1.5)
    try:
        with pytest.raises(DatabaseBusyError) as info:
            await Database.open(path)
    finally:
        holder.join()
    message = str(info.value)
    assert "locked by another process" in message and "cannot open" not in message
    async with await Store.open(path) as store:  # free again: opens normally
        assert await store.db.schema_version() == SCHEMA_VERSION


async def test_a_write_waits_out_another_writer_past_the_busy_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dbmod, "BUSY_TIMEOUT_MS", 50)
    path = tmp_path / "newt.db"
    async with await Store.open(path) as store:
        _taken, holder = _hold_lock(path, "BEGIN IMMEDIATE", 0.8)
        try:
            conv = await store.conversations.create(model="m")
            turn = await store.turns.add_pending(conv.id, "written while another wrote")
        finally:
            holder.join()
        stored = await store.turns.get(turn)
        assert stored is not None and stored.user == "written while another wrote"


def test_two_writers_three_prompts_each_at_once_ten_times(tmp_path: Path) -> None:
    """60 of 60: every round is a fresh database that all six processes create at once."""
    stored = 0
    failures: list[str] = []
    with FakeOpenAI() as server:
        for n in range(10):
            home = tmp_path / f"round{n}" / "home"
            home.parent.mkdir()
            result = run_round(server.base_url, home, processes=6, tag=f"r{n}-")
            stored += result.stored
            failures += result.failures
    assert failures == []
    assert stored == 60


def test_two_continues_at_once_both_store_their_turns(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FakeOpenAI() as server:
        first = run_round(server.base_url, home, processes=1, tag="start-")
        assert first.failures == [] and first.stored == 1
        # a slow reply keeps the first writer busy while the second starts
        server.default_reply = Reply(first_byte_delay_s=0.8)
        both = run_round(server.base_url, home, processes=2, extra_args=("-c",), tag="again-")
        asked = [
            r.body["messages"]
            for r in server.chat_requests
            if "again-" in str(r.body["messages"][-1]["content"])
        ]
    assert both.failures == []
    assert both.stored == 2
    conn = sqlite3.connect(home / "newt.db")
    try:
        (conversations,) = conn.execute("SELECT COUNT(*) FROM conversations").fetchone()
    finally:
        conn.close()
    assert conversations == 1  # both continued the one conversation
    assert stored_prompts(home / "newt.db", [*first.prompts, *both.prompts]) == 3
    # One writer at a time: the second built on the first one's turn.
    assert len(asked) == 2
    (earlier,) = [p for p in both.prompts if p in asked[0][-1]["content"]]
    assert any(m["content"] == earlier for m in asked[1][:-1])


async def test_cancelling_a_write_that_waits_for_the_lock_leaves_no_transaction_open(
    tmp_path: Path,
) -> None:
    """Esc while BEGIN waits in SQLite's busy handler: the BEGIN still completes in the
    connection's thread after the await is cancelled; it must not keep the lock."""
    path = tmp_path / "newt.db"
    async with await Store.open(path) as store:
        _taken, holder = _hold_lock(path, "BEGIN IMMEDIATE", 0.6)
        try:
            write = asyncio.create_task(store.conversations.create(model="never"))
            await asyncio.sleep(0.2)  # BEGIN IMMEDIATE is now waiting on the holder
            write.cancel()
            with pytest.raises(asyncio.CancelledError):
                await write
        finally:
            holder.join()
        conv = await store.conversations.create(model="after")  # our connection is usable
        assert not store.db.conn.in_transaction
        other = sqlite3.connect(path, timeout=0.5)  # and the lock is free for others
        try:
            other.execute("INSERT INTO notes(content, created_at) VALUES ('x', 0)")
            other.commit()
        finally:
            other.close()
        assert [c.model for c in await store.conversations.list()] == [conv.model]
