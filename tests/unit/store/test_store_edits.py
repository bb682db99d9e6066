"""Migration m009 and the store side of regenerate, edit and fork (real SQLite)."""

from __future__ import annotations

from pathlib import Path

from newt.agent.session.export import export_conversation
from newt.store import Database, Store
from newt.store.live_log import effective_resident, fork_rows, live_rows
from newt.store.migrations import MIGRATIONS
from newt.store.models import StoredTurn
from newt.store.turn_edits import fork_conversation


async def test_m009_adds_the_columns_and_keeps_older_rows(tmp_path: Path) -> None:
    path = tmp_path / "newt.db"
    db = await Database.open(path, migrate=False)
    await db.migrate(target=6)
    async with db.transaction() as conn:
        await conn.execute(
            "INSERT INTO conversations(id, title, created_at, updated_at) VALUES ('c1', 't', 0, 0)"
        )
        await conn.execute(
            "INSERT INTO turns(conversation_id, user, assistant, created_at)"
            " VALUES ('c1', 'hello', 'hi', 0)"
        )
    await db.close()
    async with await Store.open(path) as store:
        assert await store.db.schema_version() == MIGRATIONS[-1][0]
        [turn] = await store.turns.for_conversation("c1")
        assert (turn.replaced_by, turn.copied_from, turn.attachments) == (None, None, [])
        conv = await store.conversations.get("c1")
        assert conv is not None and conv.parent_id is None and conv.parent_title is None
        cur = await store.db.conn.execute("SELECT count(*) FROM model_image_support")
        assert (await cur.fetchone())[0] == 0


async def make_log(store: Store, n: int) -> tuple[str, list[int]]:
    conv = await store.conversations.create(title="topic")
    ids = []
    for i in range(n):
        turn_id = await store.turns.add_pending(conv.id, f"question {i} kiwi{i}")
        await store.turns.complete(turn_id, f"answer {i}")
        ids.append(turn_id)
    return conv.id, ids


async def test_a_replaced_turn_is_kept_hidden_and_unindexed(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "newt.db") as store:
        conv_id, ids = await make_log(store, 2)
        await store.records.add(f"t{ids[1]}.1", "turn", "Tool x {}\nResult: kiwi", role="tool")
        new = await store.turns.add_pending(conv_id, "question 1 again")
        await store.turns.complete(new, "better", replaces=ids[1])
        rows = await store.turns.for_conversation(conv_id)
        assert [r.replaced_by for r in rows] == [None, new, None]
        assert [r.user for r in live_rows(rows)] == ["question 0 kiwi0", "question 1 again"]
        # every record of the replaced turn goes: its message, reply and tool results
        for key in (f"t{ids[1]}", f"r{ids[1]}", f"t{ids[1]}.1"):
            assert await store.records.get(key) is None, key
        for key in (f"t{ids[0]}", f"r{ids[0]}", f"t{new}", f"r{new}"):
            assert await store.records.get(key) is not None, key
        assert await store.conversations.search("kiwi1") == []
        conv = await store.conversations.get(conv_id)
        assert conv is not None and conv.turn_count == 2
        exported = await export_conversation(store, conv, "md")
        assert "kiwi1" not in exported and "better" in exported


async def test_a_fork_copies_rows_and_shares_records(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "newt.db") as store:
        conv_id, ids = await make_log(store, 3)
        source = await store.conversations.get(conv_id)
        assert source is not None
        rows = await store.turns.for_conversation(conv_id)
        fork = await fork_conversation(store.db, source, rows, ids[1])
        copies = await store.turns.for_conversation(fork.id)
        assert [c.user for c in copies] == ["question 0 kiwi0", "question 1 kiwi1"]
        assert [c.copied_from for c in copies] == ids[:2]
        assert [c.record_key for c in copies] == [f"t{i}" for i in ids[:2]]
        assert [c.record_keys for c in copies] == [(f"t{i}", f"r{i}") for i in ids[:2]]
        assert await store.records.count() == 2 * 3  # nothing new in the index
        listed = await store.conversations.get(fork.id)
        assert listed is not None and listed.parent_id == conv_id
        assert listed.parent_title == "topic" and listed.turn_count == 2
        # replacing the copy keeps the original's record (the parent still holds it)
        new = await store.turns.add_pending(fork.id, "other")
        await store.turns.complete(new, "x", replaces=copies[1].id)
        assert await store.records.get(f"t{ids[1]}") is not None
        assert await store.records.get(f"r{ids[1]}") is not None
        # ...and replacing the original too drops it: no live turn holds those words
        new = await store.turns.add_pending(conv_id, "other")
        await store.turns.complete(new, "y", replaces=ids[2])
        assert await store.records.get(f"t{ids[2]}") is None
        assert await store.records.get(f"r{ids[2]}") is None


def _turn(id: int, **kw: object) -> StoredTurn:
    base: dict[str, object] = dict(
        id=id,
        conversation_id="c",
        kind="turn",
        status="complete",
        user=f"u{id}",
        assistant=f"a{id}",
        tokens_in=None,
        tokens_out=None,
        resident_turns=None,
        used_after=None,
    )
    base.update(kw)
    return StoredTurn(**base)  # type: ignore[arg-type]


def test_resident_counts_drop_turns_replaced_after_the_record() -> None:
    rows = [
        _turn(1),
        _turn(2),
        _turn(3, replaced_by=6),  # resident when record 4 was written, replaced after
        _turn(4, kind="compaction", user="R", assistant="", resident_turns=2),
        _turn(6),
        _turn(7, kind="compaction", user="R2", assistant="", resident_turns=2),  # 2 and 6
    ]
    assert effective_resident(rows) == {4: 1, 7: 2}
    # a regenerate in flight: turn 6 counts as replaced for every record
    assert effective_resident(rows, {6}) == {4: 1, 7: 1}
    assert [r.id for r in live_rows(rows)] == [1, 2, 4, 6, 7]


def test_a_fork_takes_the_records_written_right_after_its_turn() -> None:
    rows = [
        _turn(1),
        _turn(2),
        _turn(3, kind="compaction", user="R", assistant="", resident_turns=1),
        _turn(4, replaced_by=5),
        _turn(5),
        _turn(6),
    ]
    assert [r.id for r in fork_rows(rows, 2)] == [1, 2, 3]
    assert [r.id for r in fork_rows(rows, 5)] == [1, 2, 3, 5]
    assert [r.id for r in fork_rows(rows, 6)] == [1, 2, 3, 5, 6]
