"""Thinking and the reply footer's figures through a real session, store and fake server."""

from __future__ import annotations

from newt.agent import events as ev
from newt.agent.session.chat_session import ChatSession
from newt.store import Store
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.session_helpers import done_of, make_config, reply_of, run_turn

SECRET_THOUGHT = "zebracorn reasoning that must stay private"


async def open_session(fake: FakeOpenAI) -> tuple[Store, ChatSession]:
    config = make_config(fake.base_url)
    assert config.db_path is not None
    store = await Store.open(config.db_path)
    return store, await ChatSession.open(config, store)


def thinking_of(events: list[ev.AgentEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, ev.ThinkingDelta))


async def test_both_forms_are_kept_apart_stored_and_never_sent_back(fake_openai: FakeOpenAI):
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(
            Reply(
                text=f"<think>{SECRET_THOUGHT} one</think>\n\nFirst answer.",
                chunk_size=2,
                prompt_tokens=100,
                completion_tokens=40,
            ),
            Reply(text="Second answer.", reasoning=f"{SECRET_THOUGHT} two", chunk_size=4),
        )
        first = await run_turn(session, "question one")
        assert thinking_of(first) == f"{SECRET_THOUGHT} one"
        assert reply_of(first) == "First answer."
        done = done_of(first)
        assert (done.thinking, done.reply) == (f"{SECRET_THOUGHT} one", "First answer.")
        assert done.stats is not None and not done.stats.estimated
        assert (done.stats.prompt_tokens, done.stats.completion_tokens) == (100, 40)

        second = await run_turn(session, "question two")
        assert thinking_of(second) == f"{SECRET_THOUGHT} two"
        assert reply_of(second) == "Second answer."
        # the model never sees its reasoning again
        sent = fake_openai.chat_requests[-1].body["messages"]
        assert "zebracorn" not in str(sent)
        assert {"role": "assistant", "content": "First answer."} in sent

        turns = await store.turns.for_conversation(session.conversation.id)  # type: ignore[union-attr]
        assert [t.thinking for t in turns] == [f"{SECRET_THOUGHT} one", f"{SECRET_THOUGHT} two"]
        assert [t.assistant for t in turns] == ["First answer.", "Second answer."]
        # the memory counts the answer only: 40 completion tokens less the reasoning's share
        answer, thought = len("First answer."), len(f"{SECRET_THOUGHT} one")
        assert turns[0].tokens_out == round(40 * answer / (answer + thought))
        assert (turns[0].prompt_tokens, turns[0].completion_tokens) == (100, 40)
        # never indexed for recall
        cur = await store.db.conn.execute("SELECT content FROM memory_records")
        assert "zebracorn" not in str(await cur.fetchall())
        cur = await store.db.conn.execute(
            "SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'zebracorn'"
        )
        assert (await cur.fetchone())[0] == 0
    finally:
        await session.close()
        await store.close()


async def test_resume_shows_thinking_and_counts_and_memory_totals(fake_openai: FakeOpenAI):
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(
            Reply(text="A.", reasoning="thought A", prompt_tokens=120, completion_tokens=30),
            Reply(text="B.", prompt_tokens=180, completion_tokens=12),
        )
        await run_turn(session, "one")
        await run_turn(session, "two")
        status = session.memory_status()
        assert (status.total_prompt_tokens, status.total_completion_tokens) == (300, 42)
        assert (status.total_replies, status.total_estimated) == (2, 0)
        conv_id = session.conversation.id  # type: ignore[union-attr]
    finally:
        await session.close()
    config = make_config(fake_openai.base_url)
    again = await ChatSession.open(config, store)
    try:
        await again.conversations.resume(conv_id)
        history = await again.edits.history()
        assert [h.thinking for h in history] == ["thought A", ""]
        stats = [h.stats for h in history]
        assert [(s.prompt_tokens, s.completion_tokens) for s in stats if s] == [
            (120, 30),
            (180, 12),
        ]
        status = again.memory_status()
        assert (status.total_prompt_tokens, status.total_completion_tokens) == (300, 42)
        exported = await again.conversations.export("md")
        assert "thought A" in exported and "Thinking" in exported
    finally:
        await again.close()
        await store.close()


async def test_speed_from_first_to_last_token_and_estimates_without_usage(
    fake_openai: FakeOpenAI,
):
    store, session = await open_session(fake_openai)
    try:
        # 10 chunks 0.05 s apart: about 0.45 s from the first token to the last
        fake_openai.script(
            Reply(text="x" * 30, chunk_size=3, delay_s=0.05, completion_tokens=9),
            Reply(text="no usage here", usage=False),
        )
        done = done_of(await run_turn(session, "go"))
        assert done.stats is not None and done.stats.seconds is not None
        assert 0.4 <= done.stats.seconds < 2.0
        speed = done.stats.tokens_per_second
        assert speed is not None and abs(speed - 9 / done.stats.seconds) < 1e-9

        done = done_of(await run_turn(session, "again"))
        assert done.stats is not None and done.stats.estimated
        assert done.stats.completion_tokens == session.estimate_tokens("no usage here")
        assert done.stats.prompt_tokens and done.stats.prompt_tokens > 0
        turns = await store.turns.for_conversation(session.conversation.id)  # type: ignore[union-attr]
        assert [t.tokens_estimated for t in turns] == [False, True]
        assert session.memory_status().total_estimated == 1
    finally:
        await session.close()
        await store.close()
