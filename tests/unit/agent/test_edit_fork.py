"""Regenerate, edit and fork on the real store and the fake server.

Each test checks the request bodies the backend received (a replaced turn is
never sent again), the store (the old turn kept and marked, the fork's copies
and parent link), recall (a replaced turn's words never come back) and that
the memory provider matches what a fresh session restores from the log.
"""

from __future__ import annotations

from typing import Any

import pytest

from newt.agent import events as ev
from newt.agent.errors import SessionError
from newt.agent.session.chat_session import ChatSession
from newt.chat_settings import ChatSettings
from newt.recall import RecallRequest
from tests.support.fake_openai import ErrorReply, FakeOpenAI, Reply
from tests.support.session_helpers import done_of, make_config, run_turn

NO_RECALL = "[recall]\nretained_token_budget = 0\n"
# Small enough that a few turns of ~40 tokens compact (records appear in the log).
SMALL = "[memory]\ncontext_tokens = 700\n" + NO_RECALL


async def open_session(fake: FakeOpenAI, config_text: str = NO_RECALL) -> ChatSession:
    return await ChatSession.open(make_config(fake.base_url, config_text))


def sent_messages(fake: FakeOpenAI, index: int = -1) -> list[dict[str, Any]]:
    return list(fake.chat_requests[index].body["messages"])


def texts(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] if isinstance(m["content"], str) else "<parts>" for m in messages]


async def collect(events: Any) -> list[ev.AgentEvent]:
    return [e async for e in events]


def state(session: ChatSession) -> tuple[Any, ...]:
    """What the next request would be built from: the messages, the fullness,
    the resident count, the record and the keys recall leaves out."""
    provider: Any = session.provider
    messages = [(m.role, m.content) for m in provider.build_messages("SYS", "NEXT")]
    return (
        messages,
        provider.usage(),
        provider.resident_turns(),
        provider.record,
        sorted(session.log.resident_keys()),
    )


async def fresh_state(fake: FakeOpenAI, conv_id: str, config_text: str) -> tuple[Any, ...]:
    async with await open_session(fake, config_text) as fresh:
        await fresh.conversations.resume(conv_id)
        return state(fresh)


async def test_regenerate_replaces_the_last_turn_everywhere(fake_openai: FakeOpenAI) -> None:
    session = await open_session(fake_openai)
    fake_openai.script(
        Reply(text="first answer"), Reply(text="zebrafish answer"), Reply(text="better answer")
    )
    await run_turn(session, "question one")
    await run_turn(session, "question two")
    old_id = (await session.edits.history())[-1].id

    events = await collect(session.turns.regenerate())
    done = done_of(events)
    assert done.status == "complete" and done.reply == "better answer"
    # the request: the earlier turn, then the same prompt; never the old reply
    assert texts(sent_messages(fake_openai))[1:] == ["question one", "first answer", "question two"]
    assert "zebrafish answer" not in str(fake_openai.chat_requests[-1].body)
    # the store keeps the old turn, marked; the chat view does not show it
    old = await session.store.turns.get(old_id)
    assert (
        old is not None and old.replaced_by == done.turn_id and old.assistant == "zebrafish answer"
    )
    shown = [(h.user, h.assistant) for h in await session.edits.history()]
    assert shown == [("question one", "first answer"), ("question two", "better answer")]
    # recall never returns the replaced words
    assert await session.store.records.get(f"t{old_id}") is None
    assert await session.store.records.get(f"r{old_id}") is None
    found = await session.recall.recall(RecallRequest("zebrafish"))
    # (recall by meaning may offer other records; none is the replaced turn's)
    assert all("zebrafish" not in m.content for m in found.memories)
    assert all(m.turn_id != old_id for m in found.memories)
    conv = session.conversation
    assert conv is not None
    assert (await session.store.conversations.get(conv.id)).turn_count == 2  # type: ignore[union-attr]
    live = state(session)
    await session.close()
    assert await fresh_state(fake_openai, conv.id, NO_RECALL) == live


async def test_recall_never_brings_back_the_turn_being_replaced(fake_openai: FakeOpenAI) -> None:
    session = await open_session(fake_openai, "")  # recall on
    fake_openai.script(Reply(text="one"), Reply(text="the wombat answer"))
    await run_turn(session, "first")
    await run_turn(session, "tell me about the wombat")
    await collect(session.turns.regenerate())  # the old reply matches the prompt's words
    assert "the wombat answer" not in str(fake_openai.chat_requests[-1].body)
    await collect(session.turns.regenerate())  # and so does the first regenerated one
    assert "ok: tell me about the wombat" not in str(fake_openai.chat_requests[-1].body)
    await session.close()


async def test_edit_sends_the_new_words_in_place_of_the_last_prompt(
    fake_openai: FakeOpenAI,
) -> None:
    session = await open_session(fake_openai)
    await run_turn(session, "what is 2+2")
    await run_turn(session, "what is the capital of frnace")
    assert await session.edits.last_prompt() == "what is the capital of frnace"
    done = done_of(await collect(session.turns.edit_last("what is the capital of France")))
    assert done.status == "complete"
    assert texts(sent_messages(fake_openai))[1:] == [
        "what is 2+2",
        "ok: what is 2+2",
        "what is the capital of France",
    ]
    shown = [h.user for h in await session.edits.history()]
    assert shown == ["what is 2+2", "what is the capital of France"]
    conv = session.conversation
    assert conv is not None
    live = state(session)
    # the next turn builds on the edited conversation
    await run_turn(session, "and of Spain")
    assert "frnace" not in str(fake_openai.chat_requests[-1].body)
    await session.close()
    async with await open_session(fake_openai) as fresh:
        await fresh.conversations.resume(conv.id)
        assert [h.user for h in await fresh.edits.history()][-2:] == [
            "what is the capital of France",
            "and of Spain",
        ]
    assert live[0][-3][1] == "what is the capital of France"


async def test_a_failed_regenerate_keeps_the_old_turn(fake_openai: FakeOpenAI) -> None:
    session = await open_session(fake_openai)
    await run_turn(session, "hello")
    await run_turn(session, "tell me more")
    before = state(session)
    fake_openai.script(ErrorReply(400, {"error": {"message": "bad request"}}))
    done = done_of(await collect(session.turns.regenerate()))
    assert done.status == "failed"
    shown = [(h.user, h.status) for h in await session.edits.history()]
    # the old turn is still the conversation's; the failed attempt shows as failed
    assert shown[:2] == [("hello", "complete"), ("tell me more", "complete")]
    assert state(session) == before
    conv = session.conversation
    assert conv is not None
    await session.close()
    assert await fresh_state(fake_openai, conv.id, NO_RECALL) == before


async def test_nothing_to_regenerate_or_edit_in_an_empty_conversation(
    fake_openai: FakeOpenAI,
) -> None:
    async with await open_session(fake_openai) as session:
        with pytest.raises(SessionError, match="no turn"):
            await collect(session.turns.regenerate())
        with pytest.raises(SessionError, match="no prompt"):
            await session.edits.last_prompt()
        with pytest.raises(SessionError, match="nothing to fork"):
            await session.edits.fork()
        assert fake_openai.chat_requests == []


async def test_regenerate_after_compaction_restores_identically(fake_openai: FakeOpenAI) -> None:
    session = await open_session(fake_openai, SMALL)
    long = "word " * 60
    for n in range(6):
        await run_turn(session, f"turn {n} {long}")
    log = await session.log.history()
    assert any(r.kind == "compaction" for r in log), "the test needs a compaction record"
    for _ in range(2):  # twice: the second replaces a turn that replaced one
        done = done_of(await collect(session.turns.regenerate()))
        assert done.status == "complete"
        last_request = texts(sent_messages(fake_openai))
        assert last_request.count(f"turn 5 {long}") == 1
    conv = session.conversation
    assert conv is not None
    live = state(session)
    await session.close()
    assert await fresh_state(fake_openai, conv.id, SMALL) == live


async def test_fork_copies_the_turns_up_to_there(fake_openai: FakeOpenAI) -> None:
    session = await open_session(fake_openai)
    for text in ("alpha", "bravo", "charlie", "delta"):
        await run_turn(session, text)
    parent = session.conversation
    assert parent is not None
    fork = await session.edits.fork(2)
    assert fork.id != parent.id and fork.parent_id == parent.id
    assert session.conversation is not None and session.conversation.id == fork.id
    assert [h.user for h in await session.edits.history()] == ["alpha", "bravo"]
    await run_turn(session, "echo")
    assert texts(sent_messages(fake_openai))[1:] == [
        "alpha",
        "ok: alpha",
        "bravo",
        "ok: bravo",
        "echo",
    ]
    listed = {c.id: c for c in await session.conversations.list_conversations()}
    assert listed[fork.id].parent_title == "alpha" and listed[fork.id].turn_count == 3
    assert listed[parent.id].turn_count == 4  # the parent is untouched
    # the copies share the originals' recall records (one per fact in the index)
    copies = [t for t in await session.log.history() if t.kind == "turn"][:2]
    assert all(t.copied_from is not None for t in copies)
    originals = [t for t in await session.store.turns.for_conversation(parent.id)][:2]
    # the footer figures come along (the copies show the same tokens and speed)
    assert [t.prompt_tokens for t in copies] == [t.prompt_tokens for t in originals]
    assert copies[0].prompt_tokens is not None
    assert session.log.resident_keys() >= {t.record_key for t in copies}
    live = state(session)
    await session.close()
    assert await fresh_state(fake_openai, fork.id, NO_RECALL) == live


async def test_fork_with_no_number_forks_at_the_last_turn_and_checks_the_number(
    fake_openai: FakeOpenAI,
) -> None:
    async with await open_session(fake_openai) as session:
        await run_turn(session, "one")
        await run_turn(session, "two")
        with pytest.raises(SessionError, match="no turn 3"):
            await session.edits.fork(3)
        fork = await session.edits.fork()
        assert [h.user for h in await session.edits.history()] == ["one", "two"]
        assert fork.parent_id is not None


async def test_a_fork_after_compaction_starts_in_the_memory_state_of_its_turn(
    fake_openai: FakeOpenAI,
) -> None:
    session = await open_session(fake_openai, SMALL)
    long = "word " * 60
    states = []
    for n in range(7):
        await run_turn(session, f"turn {n} {long}")
        # the summary a fold owes lands before the next turn (a fork copies it too)
        await session.summaries.wait(10)
        states.append(state(session))
    log = await session.log.history()
    assert sum(r.kind == "compaction" for r in log) >= 2, "the test needs compaction records"
    for at in (5, 3):
        conv = session.conversation
        assert conv is not None
        await session.conversations.resume(conv.id if at == 5 else log[0].conversation_id)
        fork = await session.edits.fork(at)
        forked = state(session)
        # the same working set, record and fullness as the original right after turn `at`;
        # resident keys of the copies are the originals' keys
        assert forked == states[at - 1]
        assert await fresh_state(fake_openai, fork.id, SMALL) == forked
    await session.close()


async def test_recall_in_a_fork_leaves_out_what_the_fork_holds(fake_openai: FakeOpenAI) -> None:
    session = await open_session(fake_openai, "")
    fake_openai.script(Reply(text="noted"))
    await run_turn(session, "the quokka lives on Rottnest island")
    await run_turn(session, "something else entirely")
    await session.edits.fork(2)
    await run_turn(session, "where does the quokka live")
    # the turn is resident (copied): recall must not send it again as a capsule
    assert str(fake_openai.chat_requests[-1].body).count("Rottnest") == 1
    # ...while a conversation that does not hold it gets it back from recall
    await session.conversations.new_conversation()
    await run_turn(session, "where does the quokka live")
    assert "Rottnest" in str(fake_openai.chat_requests[-1].body)
    await session.close()


async def test_regenerating_a_forked_turn_keeps_the_parent_recallable(
    fake_openai: FakeOpenAI,
) -> None:
    session = await open_session(fake_openai)
    await run_turn(session, "the axolotl is a salamander")
    parent = session.conversation
    assert parent is not None
    await session.edits.fork()
    original = next(t for t in await session.log.history() if t.kind == "turn")
    await collect(session.turns.regenerate())  # replaces the copy, not the parent's turn
    assert await session.store.records.get(original.record_key) is not None
    found = await session.recall.recall(RecallRequest("axolotl salamander"))
    assert original.record_key in [r.key for r in found.memories]
    await session.close()


async def test_a_regenerate_builds_on_what_another_newt_wrote(fake_openai: FakeOpenAI) -> None:
    first = await open_session(fake_openai)
    await run_turn(first, "from the first newt")
    conv = first.conversation
    assert conv is not None
    second = await open_session(fake_openai)
    await second.conversations.resume(conv.id)
    await run_turn(second, "from the second newt")
    await second.close()
    # the first newt's view is stale: the regenerate replaces the newest turn in the store
    done = done_of(await collect(first.turns.regenerate()))
    assert done.status == "complete"
    assert texts(sent_messages(fake_openai))[1:] == [
        "from the first newt",
        "ok: from the first newt",
        "from the second newt",
    ]
    assert [h.user for h in await first.edits.history()] == [
        "from the first newt",
        "from the second newt",
    ]
    live = state(first)
    await first.close()
    assert await fresh_state(fake_openai, conv.id, NO_RECALL) == live


async def test_forks_and_regenerates_keep_the_conversation_settings(
    fake_openai: FakeOpenAI,
) -> None:
    session = await open_session(fake_openai)
    await run_turn(session, "one")
    await run_turn(session, "two")
    pirate = "You are a pirate. Answer in pirate speech. " * 8
    await session.settings_controls.update_settings(
        ChatSettings(system_prompt=pirate, temperature=0.3)
    )
    shifted = state(session)  # the prompt grew after the last measured turn
    fork = await session.edits.fork()
    assert (
        session.settings_controls.settings.system_prompt == pirate
        and session.settings_controls.settings.temperature == 0.3
    )
    assert state(session) == shifted  # the same figures, shift included
    assert await fresh_state(fake_openai, fork.id, NO_RECALL) == shifted
    parent = fork.parent_id
    assert parent is not None
    await session.conversations.resume(parent)
    assert state(session) == shifted
    # a regenerate that fails leaves the figures as they were (shift included)
    fake_openai.script(ErrorReply(400, {"error": {"message": "no"}}))
    await collect(session.turns.regenerate())
    assert state(session) == shifted
    # a regenerate sends the pirate prompt, with the figures a fresh session has
    await collect(session.turns.regenerate())
    body = fake_openai.chat_requests[-1].body
    assert pirate.strip() in body["messages"][0]["content"] and body["temperature"] == 0.3
    live = state(session)
    await session.close()
    assert await fresh_state(fake_openai, parent, NO_RECALL) == live
