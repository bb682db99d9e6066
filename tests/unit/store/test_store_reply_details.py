"""Migration 7: a turn's thinking and footer figures, on a real SQLite file."""

from __future__ import annotations

from pathlib import Path

from newt.agent.reply_stats import ReplyStats, TokenTally
from newt.store import Database, ReplyDetails, Store
from newt.store.migrations import MIGRATIONS, m008_conversation_settings


async def test_v6_turns_upgrade_and_fall_back_to_the_memory_figures(tmp_path: Path) -> None:
    path = tmp_path / "newt.db"
    db = await Database.open(path, migrate=False)
    await db.migrate(target=6)
    await db.conn.execute(
        "INSERT INTO conversations(id, title, created_at, updated_at) VALUES ('c1', 'old', 1, 2)"
    )
    await db.conn.execute(
        "INSERT INTO turns(conversation_id, user, assistant, tokens_in, tokens_out, created_at)"
        " VALUES ('c1', 'q', 'a', 200, 9, 3)"
    )
    await db.close()

    async with await Store.open(path) as store:
        (turn,) = await store.turns.for_conversation("c1")
        assert (turn.thinking, turn.prompt_tokens, turn.completion_tokens) == ("", None, None)
        assert turn.reply_seconds is None and turn.tokens_estimated is False
        # stored before the footer existed: the memory's reported figures stand in
        assert ReplyStats.of_turn(turn) == ReplyStats(200, 9, None)


async def test_details_round_trip_and_only_the_answer_is_indexed(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "newt.db") as store:
        conv = await store.conversations.create(title="t")
        first = await store.turns.add_pending(conv.id, "what is up")
        await store.turns.complete(
            first,
            "the sky",
            tokens_in=90,
            tokens_out=3,
            details=ReplyDetails("quokkathought about it", 120, 20, 0.5, False),
        )
        second = await store.turns.add_pending(conv.id, "again")
        await store.turns.complete(
            second, "still the sky", details=ReplyDetails("", 150, 4, None, True)
        )
        turns = await store.turns.for_conversation(conv.id)
        assert turns[0].thinking == "quokkathought about it"
        assert ReplyStats.of_turn(turns[0]) == ReplyStats(120, 20, 0.5, False)
        assert ReplyStats.of_turn(turns[1]) == ReplyStats(150, 4, None, True)
        assert ReplyStats(120, 20, 0.5).tokens_per_second == 40.0

        tally = TokenTally()
        tally.reset(turns)
        assert (tally.prompt_tokens, tally.completion_tokens, tally.replies) == (270, 24, 2)
        assert tally.estimated == 1

        cur = await store.db.conn.execute(
            "SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'quokkathought'"
        )
        assert (await cur.fetchone())[0] == 0
        cur = await store.db.conn.execute(
            "SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'sky'"
        )
        assert (await cur.fetchone())[0] == 2


async def test_a_database_migrated_to_8_before_7_existed_gets_7(tmp_path: Path) -> None:
    """Migration 7 was merged after 8: a file main migrated to 8 has a gap at 7."""
    path = tmp_path / "newt.db"
    db = await Database.open(path, migrate=False)
    await db.migrate(target=6)
    async with db.transaction() as conn:
        await m008_conversation_settings(conn)
        await conn.execute(
            "INSERT INTO schema_migrations(version, name, applied_at)"
            " VALUES (8, 'conversation_settings', 0)"
        )
    await db.close()

    async with await Store.open(path) as store:
        cur = await store.db.conn.execute("SELECT version FROM schema_migrations ORDER BY 1")
        assert [r[0] for r in await cur.fetchall()] == [v for v, _, _ in MIGRATIONS]
        conv = await store.conversations.create(title="t")
        turn = await store.turns.add_pending(conv.id, "q")
        await store.turns.complete(turn, "a", details=ReplyDetails("mulling", 10, 2, 0.1))
        (stored,) = await store.turns.for_conversation(conv.id)
        assert stored.thinking == "mulling"
    # and opening it again changes nothing
    async with await Store.open(path) as store:
        cur = await store.db.conn.execute("SELECT count(*) FROM schema_migrations")
        assert (await cur.fetchone())[0] == len(MIGRATIONS)
