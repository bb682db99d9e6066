"""The store on a real SQLite file: migrations, refusal of foreign files, repositories."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

from newt.store import (
    SCHEMA_VERSION,
    Database,
    DatabaseTooNewError,
    NotADatabaseError,
    Store,
)
from newt.store.migrations import MIGRATIONS


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def _tables(db: Database) -> set[str]:
    cur = await db.conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
    return {r[0] for r in await cur.fetchall()}


async def test_fresh_database_gets_every_migration(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "newt.db") as db:
        assert await db.schema_version() == SCHEMA_VERSION
        cur = await db.conn.execute("SELECT version, name FROM schema_migrations ORDER BY version")
        assert [tuple(r) for r in await cur.fetchall()] == [(v, n) for v, n, _ in MIGRATIONS]
        assert {
            "conversations",
            "turns",
            "notes",
            "memory_records",
            "memory_fts",
            "model_capabilities",
        } <= await _tables(db)
        cur = await db.conn.execute("PRAGMA journal_mode")
        assert (await cur.fetchone())[0] == "wal"
        cur = await db.conn.execute("PRAGMA foreign_keys")
        assert (await cur.fetchone())[0] == 1
        cur = await db.conn.execute("PRAGMA busy_timeout")
        assert (await cur.fetchone())[0] >= 1000


@pytest.mark.parametrize("previous", [v for v, _, _ in MIGRATIONS[:-1]])
async def test_upgrade_from_previous_version_keeps_data(tmp_path: Path, previous: int) -> None:
    path = tmp_path / "newt.db"
    db = await Database.open(path, migrate=False)
    await db.migrate(target=previous)
    assert await db.schema_version() == previous
    await db.conn.execute(
        "INSERT INTO conversations(id, title, created_at, updated_at) VALUES ('c1', 'old', 1, 2)"
    )
    await db.conn.execute(
        "INSERT INTO turns(conversation_id, user, assistant, created_at) VALUES ('c1', ?, 'hi', 3)",
        (f"hello from v{previous}",),
    )
    await db.close()

    async with await Store.open(path) as store:
        assert await store.db.schema_version() == SCHEMA_VERSION
        conv = await store.conversations.get("c1")
        assert conv is not None and conv.title == "old" and conv.turn_count == 1
        turns = await store.turns.for_conversation("c1")
        assert turns[0].user == f"hello from v{previous}"
        # the upgraded database works for the newer tables too
        await store.notes.add("prefers metric units")
        assert await store.notes.list() == ["prefers metric units"]


async def test_newer_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "newt.db"
    async with await Database.open(path) as db:
        await db.conn.execute(
            "INSERT INTO schema_migrations(version, name, applied_at) VALUES (99, 'future', 0)"
        )
    before = _digest(path)
    with pytest.raises(DatabaseTooNewError) as info:
        await Database.open(path)
    assert "newer newt" in str(info.value) and "99" in str(info.value)
    assert _digest(path) == before


async def test_file_that_is_not_a_database_is_refused_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "newt.db"
    path.write_text("these are my precious notes, not a database\n" * 50)
    before = _digest(path)
    with pytest.raises(NotADatabaseError) as info:
        await Database.open(path)
    assert str(path) in str(info.value)
    assert _digest(path) == before


async def test_failed_migration_rolls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import newt.store.db as dbmod

    async def broken(conn: object) -> None:
        raise RuntimeError("boom")

    path = tmp_path / "newt.db"
    db = await Database.open(path, migrate=False)
    await db.migrate(target=1)
    monkeypatch.setattr(dbmod, "MIGRATIONS", [*MIGRATIONS[:1], (2, "broken", broken)])
    with pytest.raises(RuntimeError):
        await db.migrate(target=2)
    assert await db.schema_version() == 1
    await db.close()


async def test_turn_lifecycle_and_records(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "newt.db") as store:
        conv = await store.conversations.create(model="m", base_url="http://x/v1")
        tid = await store.turns.add_pending(conv.id, "What is the capital of Peru?")
        pending = await store.turns.get(tid)
        assert pending is not None and pending.status == "pending"
        # pending turns are not recallable yet
        assert await store.records.get(f"t{tid}") is None
        await store.turns.complete(tid, "Lima.", tokens_in=20, tokens_out=2)
        done = await store.turns.get(tid)
        assert done is not None
        assert (done.status, done.assistant, done.tokens_in, done.tokens_out) == (
            "complete",
            "Lima.",
            20,
            2,
        )
        # two records: the user's words and the reply, each with who said it and when
        record = await store.records.get(f"t{tid}")
        reply = await store.records.get(f"r{tid}")
        assert record is not None and reply is not None
        assert (record.content, record.role, record.turn_id) == (
            "What is the capital of Peru?",
            "user",
            tid,
        )
        assert (reply.content, reply.role, reply.turn_id) == ("Lima.", "assistant", tid)
        assert record.said_at == reply.said_at == done.created_at  # when it was asked
        assert done.record_keys == (f"t{tid}", f"r{tid}")
        cid = await store.turns.add_compaction(conv.id, "SUMMARY", resident_turns=1, used_after=40)
        comp = await store.turns.get(cid)
        assert comp is not None
        assert (comp.kind, comp.assistant, comp.tokens_in, comp.tokens_out) == (
            "compaction",
            "",
            None,
            None,
        )
        assert (comp.resident_turns, comp.used_after) == (1, 40)
        assert comp.record_keys == (f"c{cid}",)
        summary = await store.records.get(f"c{cid}")
        assert summary is not None and (summary.role, summary.content) == (None, "SUMMARY")
        listed = await store.conversations.list()
        assert listed[0].title == "What is the capital of Peru?" and listed[0].turn_count == 1
        # deleting the conversation takes its turns and records with it
        await store.conversations.delete(conv.id)
        assert await store.records.count() == 0


async def test_records_count_every_kind(tmp_path: Path) -> None:
    """`records.count()`: what `newt memory forget --all` says it takes."""
    async with await Store.open(tmp_path / "newt.db") as store:
        assert await store.records.count() == 0
        conv = await store.conversations.create()
        tid = await store.turns.add_pending(conv.id, "Where is the cabin?")
        await store.turns.complete(tid, "By the lake.", tokens_in=5, tokens_out=3)
        await store.records.add("n1", "note", "The user prefers metric units.")
        await store.turns.add_compaction(conv.id, "SUMMARY", resident_turns=1, used_after=40)
        assert await store.records.count() == 4  # the message, the reply, a note, a summary
        await store.records.delete("n1")
        assert await store.records.count() == 3


async def test_failed_turn_keeps_user_text(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "newt.db") as store:
        conv = await store.conversations.create()
        tid = await store.turns.add_pending(conv.id, "my long careful question")
        await store.turns.fail(tid, "backend unreachable")
        turn = await store.turns.get(tid)
        assert turn is not None
        assert (turn.status, turn.user, turn.error) == (
            "failed",
            "my long careful question",
            "backend unreachable",
        )


async def test_prefix_lookup_and_search(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "newt.db") as store:
        a = await store.conversations.create(title="gardening")
        b = await store.conversations.create(title="taxes")
        tid = await store.turns.add_pending(b.id, "the fig tree drops leaves")
        await store.turns.complete(tid, "water it less")
        assert [c.id for c in await store.conversations.find_by_prefix(a.id[:8])] == [a.id]
        assert [c.id for c in await store.conversations.search("garden")] == [a.id]
        assert [c.id for c in await store.conversations.search("fig tree")] == [b.id]
        assert await store.conversations.find_by_prefix("%") == []


async def test_capabilities_round_trip(tmp_path: Path) -> None:
    from newt.store import ModelCapabilities

    async with await Store.open(tmp_path / "newt.db") as store:
        assert await store.capabilities.get("u", "m") is None
        await store.capabilities.put(
            ModelCapabilities("u", "m", context_window=2048, supports_tools=False)
        )
        cap = await store.capabilities.get("u", "m")
        assert cap is not None
        assert (cap.context_window, cap.supports_tools, cap.max_ok_input) == (2048, False, None)


async def test_the_stores_clock_stamps_every_row(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "newt.db") as store:
        assert store.db.clock is time.time  # the default: now
        store.db.clock = lambda: 1_683_500_000.0  # a replayed conversation's day
        conv = await store.conversations.create()
        assert conv.created_at == 1_683_500_000.0
        await store.notes.add("likes green tea")
        cid = await store.turns.add_compaction(conv.id, "SUMMARY", resident_turns=0, used_after=1)
        await store.records.add("x1", "note", "added directly")
        for key in ("n1", f"c{cid}", "x1"):
            record = await store.records.get(key)
            assert record is not None, key
            assert record.created_at == record.said_at == 1_683_500_000.0, key
