"""What a tool call copied of a forgotten message goes with it: after a forget by
word, by sentence and by conversation, the word is in no file of the store
(newt.db, its -wal and -shm), though a later turn's `recall_memory` quoted the
message in its stored tool events and searched for the word in its arguments."""

from __future__ import annotations

from typing import Any

import pytest

from newt.agent.session.chat_session import ChatSession
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.forgetting import CONTROL, SECRET, holds
from tests.support.session_helpers import make_config, run_turn

FACT = f"My sister lives in {SECRET}. She teaches at the university there."


class Asking:
    """The fake model: searches memory for the secret once, then answers without it."""

    def __init__(self) -> None:
        self.search = False

    def __call__(self, request: dict[str, Any]) -> Reply:
        last = request["messages"][-1]
        if self.search and request.get("tools") and last["role"] == "user":
            self.search = False
            call = {"name": "recall_memory", "arguments": {"query": f"sister {SECRET}"}}
            return Reply(text="", tool_calls=[call])
        return Reply(text=f"Noted. The bike lock is {CONTROL}.")


async def chat(fake: FakeOpenAI) -> tuple[ChatSession, Asking]:
    session = await ChatSession.open(make_config(fake.base_url, '[recall]\nembeddings = "off"\n'))
    model = Asking()
    fake.responder = model
    await run_turn(session, FACT)
    await session.conversations.new_conversation()
    model.search = True
    await run_turn(session, "Where does my sister live, and where does she teach?")
    assert len(fake.chat_requests) >= 3, "the model never searched memory"
    events = (await session.edits.history())[-1].tool_events
    assert events and SECRET in str(events), "no tool event quoted the fact: proves nothing"
    return session, model


@pytest.mark.parametrize("how", ["word", "sentence", "conversation"])
async def test_a_forgotten_message_leaves_every_tool_event_that_quoted_it(
    fake_openai: FakeOpenAI, how: str
) -> None:
    session, _ = await chat(fake_openai)
    try:
        db = session.store.db.path
        if how == "conversation":
            first = (await session.conversations.list_conversations())[-1]
            assert first.id != session.conversation.id if session.conversation else False
            await session.forgetting.delete_conversation(first.id)
        else:
            await session.forgetting.forget_matching(SECRET, sentences=how == "sentence")
        assert holds(db, SECRET) == []
        assert holds(db, CONTROL), "what was not forgotten must stay"
    finally:
        await session.close()
