"""What a session leaves on exit (ChatSession.finish_owed): the summary a fold
still owes goes to the handoff (print mode's detached writer), with the start
of the chat request; without a handoff the session writes it before it returns."""

from __future__ import annotations

from newt.agent.session.chat_session import ChatSession
from newt.backend.types import RequestHead
from newt.store import Store
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.session_helpers import close, open_session, run_turn

SMALL = "[memory]\ncontext_tokens = 600\n[recall]\nretained_token_budget = 0\n"


class Recorded:
    def __init__(self) -> None:
        self.summaries: list[tuple[str, RequestHead | None]] = []
        self.vectors_asked = False

    def summary(self, conversation_id: str, head: RequestHead | None) -> None:
        self.summaries.append((conversation_id, head))

    def vectors(self) -> None:
        self.vectors_asked = True


async def _folded(fake: FakeOpenAI) -> tuple[Store, ChatSession]:
    store, session = await open_session(fake, SMALL)
    for i in range(6):
        fake.script(Reply(text=f"answer {i}: " + "lorem ipsum " * 15))
        await run_turn(session, f"question {i}: " + "more words " * 15)
        owing = session.provider.summarizing()
        if owing is not None and owing.summary_pending:
            break
    owing = session.provider.summarizing()
    assert owing is not None and owing.summary_pending, "no fold owed a summary"
    return store, session


async def test_a_summary_owed_on_exit_goes_to_the_handoff(fake_openai: FakeOpenAI) -> None:
    store, session = await _folded(fake_openai)
    try:
        asked = len(fake_openai.requests)
        handoff = Recorded()
        await session.finish_owed(handoff, embed_within_s=1.0)
        assert session.conversation is not None
        [(conv_id, head)] = handoff.summaries
        assert conv_id == session.conversation.id
        assert head is not None and head == session.client.chat_head
        assert len(fake_openai.requests) == asked  # the session itself asked nothing
        owing = session.provider.summarizing()
        assert owing is not None and owing.summary_pending  # left for the writer
    finally:
        await close(store, session)


async def test_without_a_handoff_the_session_writes_it_before_it_returns(
    fake_openai: FakeOpenAI,
) -> None:
    store, session = await _folded(fake_openai)
    try:
        fake_openai.script(Reply(text="the summary of the early questions"))
        await session.finish_owed(None, embed_within_s=1.0)
        owing = session.provider.summarizing()
        assert owing is not None and not owing.summary_pending
        conv = session.conversation
        assert conv is not None
        rows = await session.store.turns.for_conversation(conv.id)
        records = [r.user for r in rows if r.kind == "compaction"]
        assert "the summary of the early questions" in records[-1]
    finally:
        await close(store, session)
