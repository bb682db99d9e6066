"""Stemmed recall (migration m005) and query words folded exactly as the index folds them."""

from __future__ import annotations

from pathlib import Path

import pytest

from newt.recall import RecallEngine, RecallRequest
from newt.recall.excerpt import select_excerpt
from newt.recall.fts_query import query_terms
from newt.recall.tokens import INDEX_TOKENIZER, fold, stem
from newt.store import Database, Store


async def _keys(engine: RecallEngine, query: str) -> list[str]:
    response = await engine.recall(RecallRequest(query))
    return [m.key for m in response.memories]


async def _add_turn(store: Store, user: str, assistant: str = "Noted.") -> str:
    conv = await store.conversations.create()
    turn_id = await store.turns.add_pending(conv.id, user)
    await store.turns.complete(turn_id, assistant)
    return f"t{turn_id}"


def _reply(key: str) -> str:
    """The reply's key of the turn whose user message is `key`."""
    return "r" + key[1:]


def test_fold_agrees_with_unicode61_not_with_casefold() -> None:
    # casefold + NFKD would give "hauptstrasse" and "file"; the index keeps both letters.
    assert fold("Hauptstraße") == "hauptstraße"
    assert fold("ﬁle") == "ﬁle"
    assert fold("Crème") == "creme"
    assert query_terms("Hauptstraße ﬁle") == ["hauptstraße", "ﬁle"]


def test_stem_is_the_index_token() -> None:
    assert stem("codes") == stem("code") == stem("coding") == "code"
    assert stem("Hauptstraße") == "hauptstraß"  # porter runs after the fold


def test_words_with_one_stem_are_one_term() -> None:
    assert query_terms("codes and the code, coding") == ["codes"]


def test_excerpt_centers_on_a_stemmed_match() -> None:
    content = "Filler words go here at length. " * 10 + "The locker code is 4417." + " More." * 20
    excerpt = select_excerpt(content, 40, query_terms("locker codes"))
    assert "The locker code is 4417." in excerpt


@pytest.mark.parametrize(
    ("stored", "query"),
    [
        ("The old office was on the Hauptstraße in Kiel.", "Hauptstraße"),
        ("Save the ﬁle before you leave.", "where is the ﬁle"),
        ("The locker code for the amber harbor is 4417.", "what were the locker codes?"),
        ("She was coding all night.", "code"),
        ("Crème brûlée at Zoë's", "creme brulee zoe"),
    ],
)
async def test_fresh_database_finds_folded_and_stemmed_words(
    tmp_path: Path, stored: str, query: str
) -> None:
    async with await Store.open(tmp_path / "newt.db") as store:
        key = await _add_turn(store, stored)
        await _add_turn(store, "Something else entirely about gardens.")
        # the user's message, and its reply beside it
        assert await _keys(RecallEngine(store), query) == [key, _reply(key)]


async def test_fresh_index_uses_the_tokenizer_recall_folds_with(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "newt.db") as db:
        cur = await db.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'memory_fts'")
        row = await cur.fetchone()
        assert row is not None and f"tokenize='{INDEX_TOKENIZER}'" in row[0]


async def test_upgrade_rebuilds_the_index_with_stems(tmp_path: Path) -> None:
    path = tmp_path / "newt.db"
    db = await Database.open(path, migrate=False)
    await db.migrate(target=4)
    await db.conn.execute(
        "INSERT INTO conversations(id, title, created_at, updated_at) VALUES ('c1', 'old', 1, 2)"
    )
    await db.conn.execute(
        "INSERT INTO memory_records(key, source, conversation_id, content, created_at)"
        " VALUES ('c900', 'compaction', 'c1', ?, 3)",
        ("User: the codes for the Hauptstraße gate\nAssistant: ok",),
    )
    # Before the upgrade the unstemmed index cannot match `code` to `codes`.
    cur = await db.conn.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'code'")
    assert (await cur.fetchone())[0] == 0
    await db.close()

    async with await Store.open(path) as store:
        engine = RecallEngine(store)
        assert await _keys(engine, "code") == ["c900"]
        assert await _keys(engine, "Hauptstraße") == ["c900"]
        # New records go through the triggers into the rebuilt index, consistently.
        key = await _add_turn(store, "Remember the coding dojo on Friday.")
        assert set(await _keys(engine, "codes")) == {"c900", key, _reply(key)}
        await store.db.conn.execute("INSERT INTO memory_fts(memory_fts) VALUES('integrity-check')")
        await store.records.delete(key)
        assert await _keys(engine, "codes") == ["c900"]
