"""Forgetting for real: what the user forgets, deletes or keeps out
of memory is gone from the request the fake server receives, from the index
and the vectors, and from every byte of newt.db, its -wal and its -shm; a
summary quoting it is rewritten or dropped; a fork of a deleted conversation
keeps working; a corrected note never comes back. With recall by meaning on
(MiniLM embedding every record), the same in every byte and vector:
tests/e2e/models/test_forget_every_byte.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from newt.agent.session.chat_session import SessionError
from newt.errors import NewtError, user_message
from newt.memory.forget_quotes import DROPPED_SUMMARY
from tests.support.fake_openai import ErrorReply, FakeOpenAI, Reply
from tests.support.forgetting import CONTROL, SECRET, holds, open_chat, sent


async def test_a_summary_quoting_a_forgotten_message_is_rewritten(
    fake_openai: FakeOpenAI,
) -> None:
    chat = await open_chat(fake_openai)
    chat.summary = ErrorReply(500, {"error": {"message": "no summaries today"}})
    try:
        await chat.say(f"My locker code is {SECRET}, please remember it.")
        await chat.filler(14)
        await chat.session.summaries.cancel()
        rows = await chat.session.store.db.conn.execute_fetchall(
            "SELECT user FROM turns WHERE kind = 'compaction' ORDER BY id DESC LIMIT 1"
        )
        assert SECRET in next(iter(rows))[0], "the owed record does not quote it: nothing to test"

        report = await chat.session.forgetting.forget_matching(SECRET)
        assert report.rewritten and not report.dropped
        assert "rewritten" in report.describe()
        rows = await chat.session.store.db.conn.execute_fetchall(
            "SELECT user FROM turns WHERE kind = 'compaction'"
        )
        assert all(SECRET not in r[0] for r in rows)
        assert holds(chat.session.store.db.path, SECRET) == []
        await chat.say("What is my locker code?")
        assert SECRET not in sent(fake_openai)
    finally:
        await chat.session.close()


async def test_a_model_summary_quoting_a_forgotten_message_is_dropped(
    fake_openai: FakeOpenAI,
) -> None:
    chat = await open_chat(fake_openai)
    chat.summary = Reply(text=f"The user said: my locker code is {SECRET}, please remember it.")
    try:
        await chat.say(f"My locker code is {SECRET}, please remember it.")
        await chat.filler(14)
        await chat.session.summaries.settle(30)
        rows = await chat.session.store.db.conn.execute_fetchall(
            "SELECT user FROM turns WHERE kind = 'compaction' ORDER BY id DESC LIMIT 1"
        )
        assert "The user said" in next(iter(rows))[0], "no model summary landed: nothing to test"

        report = await chat.session.forgetting.forget_matching(SECRET)
        assert report.dropped
        rows = await chat.session.store.db.conn.execute_fetchall(
            "SELECT user FROM turns WHERE kind = 'compaction' ORDER BY id DESC LIMIT 1"
        )
        assert DROPPED_SUMMARY in next(iter(rows))[0]
        assert holds(chat.session.store.db.path, SECRET) == []
        await chat.say("What is my locker code?")
        assert SECRET not in sent(fake_openai)
    finally:
        await chat.session.close()


async def test_deleting_a_conversation_leaves_its_fork_working(fake_openai: FakeOpenAI) -> None:
    chat = await open_chat(fake_openai)
    s = chat.session
    try:
        await chat.say("The spare key is under the PAPAYA42 flowerpot.")
        await chat.say("Remember that the boat is called Seagull.")
        assert s.conversation is not None
        original = s.conversation.id
        await s.memory_commands.note(f"the garage code is {SECRET}")  # made in this conversation
        log = await s.log.history()
        fork = await s.edits.fork(log[-1].id)
        await s.conversations.resume(original)
        await chat.say(f"Only the original knows {CONTROL}.")

        conv, report = await s.forgetting.delete_conversation(original[:8])
        assert conv.id == original and report.conversations == 1 and report.notes == 1
        assert s.conversation is None  # the open one was deleted: a fresh one starts
        assert [c.id for c in await s.conversations.list_conversations()] == [fork.id]
        db = s.store.db.path
        assert holds(db, CONTROL) == [] and holds(db, SECRET) == []
        assert SECRET not in s.settings_controls.system_prompt

        await s.conversations.resume(fork.id)  # the fork opens with its own copies
        await chat.say("What was the boat called?")
        assert "Seagull" in sent(fake_openai)
        hits = await s.memory_records.search("PAPAYA42 flowerpot")
        assert hits and hits[0].conversation_id == fork.id
        await s.conversations.new_conversation()
        await chat.say("Where is the spare key, under which flowerpot?")
        assert "PAPAYA42" in sent(fake_openai), "the fork's recall record went with the original"
    finally:
        await s.close()


async def test_rename_with_a_unique_prefix(fake_openai: FakeOpenAI) -> None:
    chat = await open_chat(fake_openai)
    try:
        await chat.say("hello there")
        assert chat.session.conversation is not None
        renamed = await chat.session.conversations.rename_conversation(
            chat.session.conversation.id[:6], "  Trip   plans "
        )
        assert renamed.title == "Trip plans"
        assert chat.session.conversation.title == "Trip plans"
        with pytest.raises(Exception, match="empty"):
            await chat.session.conversations.rename_conversation(renamed.id, "   ")
    finally:
        await chat.session.close()


async def test_forgetting_a_word_that_is_no_key_is_the_users_error(
    fake_openai: FakeOpenAI,
) -> None:
    """A key that names no record is one of newt's errors (exit 2), and nothing goes."""
    chat = await open_chat(fake_openai)
    try:
        await chat.say("hello there")
        with pytest.raises(NewtError, match="not a record key") as caught:
            await chat.session.forgetting.forget(["hello"])
        assert user_message(caught.value) is not None and caught.value.exit_status == 2
        assert await chat.session.memory_records.search("hello there")
    finally:
        await chat.session.close()


async def test_an_incognito_conversation_is_never_indexed_or_embedded(
    fake_openai: FakeOpenAI,
) -> None:
    chat = await open_chat(fake_openai, "auto")
    s = chat.session
    try:
        await s.forgetting.set_incognito(True)
        await chat.say(f"Between us: my locker code is {SECRET}.")
        await chat.filler(2)
        assert s.conversation is not None and s.conversation.incognito
        assert "save_note" not in json.dumps(fake_openai.chat_requests[-1].body.get("tools", []))
        assert await s.store.conversations.get(s.conversation.id) is None  # memory only
        with pytest.raises(SessionError, match="incognito saves nothing"):
            await s.memory_commands.note(f"the code is {SECRET}")
        assert await s.memory_commands.note("list") is not None  # reading the notes still works
        await chat.embedded()
        rows = await s.store.db.conn.execute_fetchall("SELECT count(*) FROM memory_records")
        assert next(iter(rows))[0] == 0
        rows = await s.store.db.conn.execute_fetchall("SELECT count(*) FROM memory_vectors")
        assert next(iter(rows))[0] == 0

        await s.forgetting.set_incognito(False)
        await s.conversations.new_conversation()
        assert not s.incognito
        await chat.say("What is my locker code?")
        assert SECRET not in sent(fake_openai)
    finally:
        await s.close()


async def test_incognito_again_after_leaving_an_unsaved_conversation(
    fake_openai: FakeOpenAI,
) -> None:
    """An incognito conversation (in memory), then a saved one resumed and made
    incognito too: the copy does not clash with the first one's rows, and
    turns made in memory never share a number (a recall key) with the database's."""
    chat = await open_chat(fake_openai)
    s = chat.session
    try:
        await chat.say(f"Remember {CONTROL}.")
        saved = s.conversation
        assert saved is not None
        await s.forgetting.set_incognito(True)  # it goes to memory; nothing of it stays on disk
        await s.conversations.new_conversation()
        await chat.say(f"Between us: {SECRET}.")
        unsaved = await s.edits.history()
        assert unsaved and all(t.id >= 1 << 50 for t in unsaved)
        await s.forgetting.set_incognito(False)  # leaves the unsaved one for a fresh, saved one
        await chat.say("a saved message")
        again = s.conversation
        assert again is not None and again.id != saved.id
        await s.forgetting.set_incognito(True)  # copies it to memory: no clash with earlier rows
        await chat.say("and one more")
        assert [t.user for t in await s.edits.history()][-2:] == ["a saved message", "and one more"]
        assert await s.store.conversations.get(again.id) is None
    finally:
        await s.close()


async def test_turning_incognito_on_later_removes_what_was_indexed(
    fake_openai: FakeOpenAI,
) -> None:
    chat = await open_chat(fake_openai, "auto")
    s = chat.session
    try:
        await chat.say(f"My locker code is {SECRET}.")
        await chat.embedded()
        report = await s.forgetting.set_incognito(True)
        assert report is not None and report.records == 2
        rows = await s.store.db.conn.execute_fetchall("SELECT count(*) FROM memory_vectors")
        assert next(iter(rows))[0] == 0
        await chat.say("one more thing to keep between us")
        await s.conversations.new_conversation()
        assert s.incognito  # /new keeps the choice until it is turned off
        await s.forgetting.set_incognito(False)
        await chat.say("What is my locker code?")
        assert SECRET not in sent(fake_openai)
    finally:
        await s.close()


@pytest.mark.parametrize("how", ["replace", "remove", "tool"])
async def test_a_corrected_note_never_comes_back(fake_openai: FakeOpenAI, how: str) -> None:
    chat = await open_chat(fake_openai)
    s = chat.session
    try:
        await chat.say("My sister lives in Tromsø, by the way.")
        await s.memory_commands.note("sister lives in Tromsø")
        await chat.filler(3)
        if how == "replace":
            await s.memory_commands.note("replace Tromsø => sister lives in Bergen")
        elif how == "remove":
            await s.memory_commands.note("remove Tromsø")
        else:  # the model's save_note tool, inside a turn
            fake_openai.responder = None
            fake_openai.script(
                Reply(
                    tool_calls=[
                        {
                            "name": "save_note",
                            "arguments": {
                                "action": "replace",
                                "old_text": "Tromsø",
                                "content": "sister lives in Bergen",
                            },
                        }
                    ]
                ),
                Reply(text="Updated."),
            )
            await chat.say("She moved to Bergen, update the note.")
            fake_openai.responder = chat._respond
        await chat.say("And where does she live now?")  # the same conversation
        assert "Tromsø" not in sent(fake_openai)
        await s.conversations.new_conversation()  # another one: recall, notes
        await chat.say("Where does my sister live?")
        assert "Tromsø" not in sent(fake_openai)
        if how != "remove":
            assert "sister lives in Bergen" in sent(fake_openai)
        assert holds(s.store.db.path, "Tromsø") == []
    finally:
        await s.close()


async def test_recall_preview_shows_the_capsules_without_counting(
    fake_openai: FakeOpenAI,
) -> None:
    chat = await open_chat(fake_openai)
    s = chat.session
    try:
        await chat.say(f"My locker code is {SECRET}, please remember it.")
        await chat.filler(14)  # the message leaves the working set
        await s.summaries.wait(30)  # a background summary is a request of its own
        requests = len(fake_openai.chat_requests)
        counts = "SELECT sum(access_count) FROM memory_records"
        before = next(iter(await s.store.db.conn.execute_fetchall(counts)))[0]
        report, block = await s.turns.recall_preview("what is my locker code")
        assert report is not None and any(SECRET in c.excerpt for c in report.capsules)
        assert SECRET in block
        assert len(fake_openai.chat_requests) == requests  # nothing was sent
        after = next(iter(await s.store.db.conn.execute_fetchall(counts)))[0]
        assert after == before  # a look is not a use
    finally:
        await s.close()


async def test_migration_12_on_an_old_database(tmp_path: Path) -> None:
    """Notes made before migration 12 belong to no conversation (deleting one
    keeps them); conversations start remembered, not incognito."""
    from newt.store import Database, Store
    from newt.store.forget import MemoryEraser

    path = tmp_path / "newt.db"
    db = await Database.open(path, migrate=False)
    await db.migrate(target=11)
    await db.conn.execute(
        "INSERT INTO conversations(id, title, created_at, updated_at) VALUES ('c1', 'old', 1, 2)"
    )
    await db.conn.execute("INSERT INTO notes(content, created_at) VALUES ('likes tea', 1)")
    await db.close()
    async with await Store.open(path) as store:
        conv = await store.conversations.get("c1")
        assert conv is not None and not conv.incognito
        await MemoryEraser(store.db).delete_conversation("c1")
        assert await store.notes.list() == ["likes tea"]


async def test_a_forgotten_note_goes_like_a_removed_one(fake_openai: FakeOpenAI) -> None:
    chat = await open_chat(fake_openai)
    s = chat.session
    try:
        await chat.say("Note this: sister lives in Tromsø.")
        await s.memory_commands.note("sister lives in Tromsø")
        await chat.say("Thanks, that is all for now.")  # the note rides in the system prompt
        assert "sister lives in Tromsø" in sent(fake_openai)
        hits = [h for h in await s.memory_records.search("Tromsø") if h.kind == "note"]
        assert hits
        report = await s.forgetting.forget([hits[0].key])
        assert report.notes == 1
        await chat.say("Where does my sister live?")
        assert "Tromsø" not in sent(fake_openai)
        assert holds(s.store.db.path, "Tromsø") == []
    finally:
        await s.close()
