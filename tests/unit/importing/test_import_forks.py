"""ChatGPT's other branches as newt forks: the branch last seen is the
conversation, every other leaf of the tree a fork of it that copies the turns it
shares (pointing at them, sharing their recall records, as /fork does) and goes on
with its own; all of it in the conversation's one transaction.

From tests/fixtures/import/chatgpt_conversations.json (an abandoned user message
beside the second prompt) and a tree made here with a regenerated first reply.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from newt.agent.session.chat_session import ChatSession
from newt.importing import ImportSummary, import_conversations, read_source
from newt.store import Store
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.importing import FIXTURES, counts
from tests.support.session_helpers import make_config, run_turn

CHATGPT = FIXTURES / "chatgpt_conversations.json"


async def run(store: Store, path: Path) -> ImportSummary:
    _, items = read_source(path)
    return await import_conversations(store, list(items))


def forked_at(db: Path, conv_id: str) -> int | None:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT forked_at FROM conversations WHERE id = ?", (conv_id,)
        ).fetchone()[0]


async def test_the_abandoned_branch_is_a_fork_sharing_the_first_turn(tmp_path: Path) -> None:
    db = tmp_path / "n.db"
    async with await Store.open(db) as store:
        summary = await run(store, CHATGPT)
        assert (len(summary.imported), summary.forks, summary.turns) == (1, 1, 3)
        convs = await store.conversations.list()
        (main,) = [c for c in convs if c.parent_id is None]
        (fork,) = [c for c in convs if c.parent_id is not None]
        assert (fork.parent_id, fork.title) == (main.id, "Paris trip (fork)")
        assert fork.created_at == 1700000200.0  # when that branch was written
        ours = await store.turns.for_conversation(main.id)
        theirs = await store.turns.for_conversation(fork.id)
        assert [(t.user, t.assistant) for t in theirs] == [
            ("I fly to Paris on May 3rd.", "Have a good flight."),
            ("an abandoned branch", ""),
        ]
        assert theirs[0].copied_from == ours[0].id and theirs[1].copied_from is None
        # the copy shares the original's record; the branch's own turn has its own
        assert await store.records.get(f"t{theirs[0].id}") is None
        assert await store.records.get(f"t{ours[0].id}") is not None
        own = await store.records.get(f"t{theirs[1].id}")
        assert own is not None and own.said_at == 1700000200.0
    assert forked_at(db, fork.id) == ours[0].id


def _regenerated() -> list[dict[str, object]]:
    """u1 answered twice: a1old (abandoned), then a1, which the talk went on from."""

    def node(ident: str, parent: str | None, kids: list[str], role: str, text: str, t: float):
        msg = {"author": {"role": role}, "create_time": t, "content": {"parts": [text]}}
        return {"id": ident, "parent": parent, "children": kids, "message": msg}

    mapping = {
        "u1": node("u1", None, ["a1old", "a1"], "user", "Name a cheese.", 1600000000.0),
        "a1old": node("a1old", "u1", [], "assistant", "Gouda.", 1600000005.0),
        "a1": node("a1", "u1", ["u2"], "assistant", "Comté.", 1600000050.0),
        "u2": node("u2", "a1", ["a2"], "user", "From where?", 1600000100.0),
        "a2": node("a2", "u2", [], "assistant", "The Jura.", 1600000105.0),
    }
    return [
        {
            "title": "Cheese",
            "create_time": 1600000000.0,
            "conversation_id": "cheese",
            "current_node": "a2",
            "mapping": mapping,
        }
    ]


async def test_a_regenerated_first_reply_forks_at_no_shared_turn(tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(_regenerated()), encoding="utf-8")
    db = tmp_path / "n.db"
    async with await Store.open(db) as store:
        summary = await run(store, path)
        assert summary.forks == 1 and not summary.refused
        (fork,) = [c for c in await store.conversations.list() if c.parent_id is not None]
        turns = await store.turns.for_conversation(fork.id)
        assert [(t.user, t.assistant) for t in turns] == [("Name a cheese.", "Gouda.")]
    assert forked_at(db, fork.id) is None
    once = counts(db)
    async with await Store.open(db) as store:  # again: nothing twice, forks included
        again = await run(store, path)
    assert again.imported == [] and again.forks == 0 and counts(db) == once


async def test_a_fork_that_fails_to_write_leaves_nothing_of_its_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import newt.importing.writer as writer

    def broken(title: str) -> str:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(writer, "fork_title", broken)
    db = tmp_path / "n.db"
    async with await Store.open(db) as store:
        summary = await run(store, CHATGPT)
    assert summary.imported == [] and "disk on fire" in dict(summary.refused)["cg-1"]
    assert counts(db) == (0, 0, 0, 0)


async def test_the_fork_resumes_and_its_history_goes_to_the_model(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = make_config(fake_openai.base_url)
    assert config.db_path is not None
    store = await Store.open(config.db_path)
    session = await ChatSession.open(config, store)
    try:
        await run(store, CHATGPT)
        (fork,) = [c for c in await store.conversations.list() if c.parent_id is not None]
        await session.conversations.resume(fork.id)
        fake_openai.script(Reply(text="ok"))
        await run_turn(session, "Where was I flying?")
        sent = json.dumps(fake_openai.chat_requests[-1].body["messages"])
        assert "I fly to Paris on May 3rd." in sent and "an abandoned branch" in sent
        assert "The Louvre" not in sent  # the other branch's words are not this fork's
    finally:
        await session.close()
        await store.close()
