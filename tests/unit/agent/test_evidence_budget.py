"""The retained-evidence budget fits the window, and the
pre-send guard makes room for the capsules (or drops them) so they never
cause an overflow."""

from __future__ import annotations

import json
import math

from newt.agent import events as ev
from newt.agent.session.chat_session import ChatSession
from newt.config import RecallConfig
from newt.recall.evidence import (
    EVIDENCE_SHARE,
    MIN_EVIDENCE_TOKENS,
    evidence_budget,
)
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.session_helpers import make_config, run_turn


def test_the_budget_is_a_share_of_the_room_capped_by_the_config() -> None:
    # room: the window less the reply reserve
    assert evidence_budget(4096, 1536) == int(1536 * EVIDENCE_SHARE)
    assert evidence_budget(1024, 8192) == min(1024, int(8192 * EVIDENCE_SHARE))
    assert evidence_budget(1024, 131072) == 1024  # the config caps it
    assert evidence_budget(4000, 131072) == 4000
    assert evidence_budget(0, 131072) == 0  # recall off stays off
    assert evidence_budget(-5, 131072) == 0
    small = math.ceil(MIN_EVIDENCE_TOKENS / EVIDENCE_SHARE) - 1  # a share just below the minimum
    assert int(small * EVIDENCE_SHARE) < MIN_EVIDENCE_TOKENS
    assert evidence_budget(1024, small) == 0  # too small to hold an excerpt
    assert evidence_budget(MIN_EVIDENCE_TOKENS, 100_000) == MIN_EVIDENCE_TOKENS
    assert EVIDENCE_SHARE <= 0.5  # the recent turns keep at least half
    assert RecallConfig().retained_token_budget == 4096


async def test_a_small_window_gets_a_small_evidence_budget(fake_openai: FakeOpenAI) -> None:
    session = await ChatSession.open(
        make_config(fake_openai.base_url, "[memory]\ncontext_tokens = 2048\n")
    )
    try:
        fake_openai.script(Reply(text="noted"))
        await run_turn(session, "The locker code for the amber harbor is 4417.")
        await session.conversations.new_conversation()
        fake_openai.script(Reply(text="4417"))
        events = await run_turn(session, "What is the locker code for the amber harbor?")
        (evidence,) = [e for e in events if isinstance(e, ev.RetainedEvidence)]
        ceiling, reserve = session.capabilities.ceiling_and_reserve()
        body = fake_openai.chat_requests[-1].body
        # the conversation's share: the room less the system prompt and tool schemas
        fixed = session.estimate_tokens(body["messages"][0]["content"])
        fixed += session.estimate_tokens(json.dumps(body["tools"]))
        room = ceiling - reserve - fixed
        budget = evidence_budget(4096, room)
        assert 0 < budget < 4096 and budget == int(room * EVIDENCE_SHARE)
        # (the turn counts the schemas and prompt as it holds them, a few tokens
        # from their JSON in the request; without them it would be ~200 more)
        assert abs(evidence.report.budget_tokens - budget) <= 10
        budget = evidence.report.budget_tokens
        assert evidence.report.retained_tokens <= budget
        content = body["messages"][-1]["content"]
        assert "4417" in content
        block = content[: content.index("What is the locker code")]
        assert session.estimate_tokens(block) <= budget  # the block as rendered fits
    finally:
        await session.close()


async def test_the_guard_counts_the_capsules_and_drops_them_rather_than_overflow(
    fake_openai: FakeOpenAI,
) -> None:
    # A window so small that the question, the reply reserve and the capsules
    # cannot all fit even with an empty history: the capsules go, the turn goes out.
    session = await ChatSession.open(
        make_config(
            fake_openai.base_url,
            "[memory]\ncontext_tokens = 1200\n[recall]\nretained_token_budget = 4000\n"
            '[backend]\ntools = "on"\n',  # their schemas take room too
        )
    )
    try:
        fact = "The gate code at the north warehouse is 1619. " + "Background detail. " * 20
        fake_openai.script(Reply(text="ok"))
        await run_turn(session, fact)
        await session.conversations.new_conversation()
        question = "What is the gate code at the north warehouse? " + "Please answer. " * 100
        fake_openai.script(Reply(text="1619"))
        events = await run_turn(session, question)
        assert not [e for e in events if isinstance(e, ev.TurnError)]
        (evidence,) = [e for e in events if isinstance(e, ev.RetainedEvidence)]
        assert any("1619" in c.excerpt for c in evidence.report.capsules)  # recall found it
        sent = fake_openai.chat_requests[-1].body["messages"][-1]["content"]
        assert sent == question  # no capsules: they would not have fit
        ceiling, reserve = session.capabilities.ceiling_and_reserve()
        assert session.estimate_tokens(sent) + reserve <= ceiling
    finally:
        await session.close()


async def test_a_fact_never_asked_before_is_not_crowded_out_by_often_recalled_ones(
    fake_openai: FakeOpenAI,
) -> None:
    """Packing goes best match first: records hit again and again do not
    crowd out the asked fact (no hits yet) from a small budget."""
    session = await ChatSession.open(
        make_config(fake_openai.base_url, "[memory]\ncontext_tokens = 2048\n")
    )
    try:
        fake_openai.script(Reply(text="noted"))
        await run_turn(session, "The locker code for the harbor storage is 4417.")
        for i in range(8):
            fake_openai.script(Reply(text="noted"))
            await run_turn(
                session, f"Harbor storage note {i}: " + "the harbor storage shed is busy " * 6
            )
        await session.conversations.new_conversation()
        for _ in range(4):  # the notes get recalled (and hit) again and again
            fake_openai.script(Reply(text="ok"))
            await run_turn(session, "harbor storage shed busy")
        await session.conversations.new_conversation()
        fake_openai.script(Reply(text="4417"))
        events = await run_turn(session, "What is the locker code for the harbor storage?")
        (evidence,) = [e for e in events if isinstance(e, ev.RetainedEvidence)]
        assert any("4417" in c.excerpt for c in evidence.report.capsules)
        assert "4417" in fake_openai.chat_requests[-1].body["messages"][-1]["content"]
    finally:
        await session.close()
