"""A forgotten message is in no byte of newt.db, its -wal or its -shm, and has no
vector left: the real turn path with recall by meaning on, so every
record is embedded by all-MiniLM-L6-v2 in process, from the wheel the test
command caches in ~/.cache/newt-llama. The rest of forgetting, by words, is
tests/integration/memory/test_forget.py."""

from __future__ import annotations

from newt.store.forget import FORGOTTEN
from tests.support.fake_openai import FakeOpenAI
from tests.support.forgetting import CONTROL, SECRET, holds, open_chat, sent


async def test_a_forgotten_message_is_in_no_byte_of_the_database(
    fake_openai: FakeOpenAI,
) -> None:
    chat = await open_chat(fake_openai, "auto")
    try:
        db = chat.session.store.db.path
        await chat.say(f"My locker code is {SECRET}, please remember it.")
        await chat.say(f"And the bike lock is {CONTROL}.")
        await chat.filler(6)
        await chat.embedded()
        vectors = await chat.session.store.db.conn.execute_fetchall(
            "SELECT count(*) FROM memory_vectors v JOIN memory_records r ON r.id = v.record_id"
            " WHERE r.content LIKE ?",
            (f"%{SECRET}%",),
        )
        assert next(iter(vectors))[0] > 0, "the secret was never embedded: the test proves nothing"
        assert holds(db, SECRET), "the secret never reached the file: the test proves nothing"

        preview = await chat.session.memory_records.matching(SECRET)
        assert {h.kind for h in preview} == {"message", "reply"}
        report = await chat.session.forgetting.forget_matching(SECRET)
        assert report.records == 2 and report.messages == 2 and report.scrubbed

        assert holds(db, SECRET) == []
        assert holds(db, CONTROL), "what was not forgotten must stay"
        rows = await chat.session.store.db.conn.execute_fetchall(
            "SELECT count(*) FROM memory_vectors v JOIN memory_records r ON r.id = v.record_id"
            " WHERE r.content LIKE ?",
            (f"%{SECRET}%",),
        )
        assert next(iter(rows))[0] == 0
        await chat.say("What is my locker code?")
        assert SECRET not in sent(fake_openai)
        assert FORGOTTEN in sent(fake_openai)  # the message is still there, as forgotten
        assert all(
            SECRET not in h.content for h in await chat.session.memory_records.search(SECRET)
        )
        assert chat.session.conversation is not None
        # it was made from the message: now from what remains
        assert chat.session.conversation.title.startswith("And the bike lock is")
    finally:
        await chat.session.close()
    assert holds(db, SECRET) == []
