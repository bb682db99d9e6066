"""Migration 10: a memory record says who said what and when, in columns."""

from __future__ import annotations

from pathlib import Path

from newt.store import Database, Store


async def test_v9_turn_records_are_split_into_the_message_and_the_reply(tmp_path: Path) -> None:
    path = tmp_path / "newt.db"
    db = await Database.open(path, migrate=False)
    await db.migrate(target=9)
    conn = db.conn
    await conn.execute(
        "INSERT INTO conversations(id, title, created_at, updated_at) VALUES ('c1', 'old', 1, 2)"
    )
    await conn.execute(
        "INSERT INTO turns(id, conversation_id, user, assistant, status, created_at)"
        " VALUES (7, 'c1', 'My sister lives in Tromsø.', 'Lovely city!', 'complete', 1000)"
    )
    await conn.execute(
        "INSERT INTO memory_records(key, source, conversation_id, turn_id, content, created_at)"
        " VALUES ('t7', 'turn', 'c1', 7, 'User: My sister lives in Tromsø.\nAssistant: Lovely"
        " city!', 1005)"
    )
    await conn.execute(
        "INSERT INTO memory_records(key, source, conversation_id, turn_id, content, created_at)"
        " VALUES ('t7.1', 'turn', 'c1', 7, 'Tool time {}\nResult: noon', 1005)"
    )
    await conn.execute("INSERT INTO notes(id, content, created_at) VALUES (3, 'likes tea', 900)")
    await conn.execute(
        "INSERT INTO memory_records(key, source, note_id, content, created_at)"
        " VALUES ('n3', 'note', 3, 'likes tea', 900)"
    )
    await db.close()

    async with await Store.open(path) as store:
        cur = await store.db.conn.execute(
            "SELECT key, role, content, said_at FROM memory_records ORDER BY key"
        )
        rows = {r[0]: (r[1], r[2], r[3]) for r in await cur.fetchall()}
        assert rows == {
            "n3": (None, "likes tea", 900),
            "r7": ("assistant", "Lovely city!", 1000),
            "t7": ("user", "My sister lives in Tromsø.", 1000),
            "t7.1": ("tool", "Tool time {}\nResult: noon", 1000),
        }
        # the index follows the split: the reply's words find the reply alone
        cur = await store.db.conn.execute(
            "SELECT r.key FROM memory_fts f JOIN memory_records r ON r.id = f.rowid"
            " WHERE memory_fts MATCH 'lovely'"
        )
        assert [r[0] for r in await cur.fetchall()] == ["r7"]
        record = await store.records.get("t7")
        assert record is not None and record.role == "user" and record.said_at == 1000


async def test_a_turn_is_stored_as_two_records_with_the_time_it_was_said(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "newt.db") as store:
        store.db.clock = lambda: 1_683_500_000.0  # 8 May 2023: a replayed conversation
        conv = await store.conversations.create(title="t")
        turn = await store.turns.add_pending(conv.id, "I adopted a cat named Mochi.")
        store.db.clock = lambda: 1_683_500_030.0
        await store.turns.complete(turn, "Congratulations on Mochi!")
        user = await store.records.get(f"t{turn}")
        reply = await store.records.get(f"r{turn}")
        assert user is not None and reply is not None
        assert (user.role, user.content, user.said_at) == (
            "user",
            "I adopted a cat named Mochi.",
            1_683_500_000.0,
        )
        assert (reply.role, reply.content, reply.said_at) == (
            "assistant",
            "Congratulations on Mochi!",
            1_683_500_000.0,
        )
        # a reply with no words is not a record
        empty = await store.turns.add_pending(conv.id, "ok")
        await store.turns.complete(empty, "")
        assert await store.records.get(f"r{empty}") is None
