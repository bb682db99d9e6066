"""A message said in a sitting where other messages matched the query too is
lifted by that sitting's worth (recall/sittings.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from newt.recall import MemoryRecord, RecallEngine, RecallRequest
from newt.recall.sittings import SITTING_GAP_S, with_sittings
from newt.recall.tuning import RecallTuning
from newt.store import Store

SITTING_SHARE = RecallTuning().sitting_share

HOUR = 3600.0


def record(
    rid: int,
    score: float,
    said_at: float,
    *,
    role: str | None = "user",
    source: str = "turn",
    conversation: str = "c",
) -> MemoryRecord:
    return MemoryRecord(
        rid, f"t{rid}", source, conversation, f"text {rid}", 0, said_at, score,  # type: ignore[arg-type]
        role, said_at=said_at, turn_id=rid if source == "turn" else None,
    )  # fmt: skip


def test_two_matches_said_together_rise_above_a_better_lone_match() -> None:
    lone = record(1, 0.70, 0.0)
    first = record(2, 0.65, 10 * HOUR)
    second = record(3, 0.60, 10 * HOUR + 60)
    ranked = with_sittings([lone, first, second], 1.0, depth=3, top=2)
    assert [r.id for r in ranked] == [2, 3, 1]
    together = 0.65 + 0.60
    assert ranked[0].score == 0.65 * (1 + together / together)
    assert ranked[1].score == 0.60 * 2
    assert ranked[2].score == 0.70 * (1 + 0.70 / together)


def test_a_candidate_below_the_depth_joins_the_sitting_said_within_the_gap() -> None:
    heads = [record(1, 0.9, 0.0), record(2, 0.8, 60.0)]
    inside = record(3, 0.1, 60.0 + SITTING_GAP_S - 1)
    outside = record(4, 0.1, 60.0 + SITTING_GAP_S + 1)
    ranked = {r.id: r.score for r in with_sittings([*heads, inside, outside], 1.0, depth=2, top=2)}
    assert ranked[3] == 0.1 * 2
    assert ranked[4] == 0.1


def test_notes_summaries_other_conversations_and_a_share_of_zero_gain_nothing() -> None:
    note = record(1, 0.9, 0.0, role=None, source="note")
    summary = record(2, 0.8, 0.0, role=None, source="compaction")
    mine = record(3, 0.7, 0.0)
    other = record(4, 0.6, 30.0, conversation="d")
    ranked = {
        r.id: r.score for r in with_sittings([note, summary, mine, other], 1.0, depth=30, top=2)
    }
    assert ranked[1] == 0.9 and ranked[2] == 0.8
    # Said half a minute apart, but in two conversations: two sittings of one each.
    assert ranked[3] == 0.7 * 2
    assert ranked[4] == 0.6 * (1 + 0.6 / 0.7)
    same = [record(5, 0.4, 0.0), record(6, 0.3, 1.0)]
    assert with_sittings(same, 0.0, depth=30, top=2) == same


async def test_recall_lifts_what_was_said_in_the_sitting_of_the_best_match(tmp_path: Path) -> None:
    """The best match was said in one sitting, with a passing mention of the
    paddle; a sitting days later mentions the paddle as well, in as many
    words. With sittings on, the mention said beside the
    best match goes first."""
    async with await Store.open(tmp_path / "newt.db") as store:
        conv = await store.conversations.create()
        clock = [1_000_000.0]
        store.db.clock = lambda: clock[0]

        async def say(user: str, reply: str, at: float) -> None:
            clock[0] = at
            turn = await store.turns.add_pending(conv.id, user)
            await store.turns.complete(turn, reply)

        start, day = clock[0], 24 * HOUR
        await say("The kayak trip to the lake is booked: kayak, lake, trip.", "Nice.", start)
        await say("Something else entirely.", "Right.", start + 60)
        await say("I bought a new paddle.", "Good idea.", start + 120)
        for n in range(12):
            await say(
                f"Filler {n} about the garden and weather.", f"Reply {n}.", start + day * (n + 1)
            )
        await say("My old paddle broke.", "Ok.", start + 20 * day)
        engine = RecallEngine(store)
        query = RecallRequest("kayak lake trip paddle", limit=8)
        engine.tuning = replace(engine.tuning, sitting_share=0.0)
        alone = [r.content for r in (await engine.recall(query, count_hits=False)).memories]
        engine.tuning = replace(engine.tuning, sitting_share=SITTING_SHARE)
        lifted = [r.content for r in (await engine.recall(query, count_hits=False)).memories]
        beside, later = "I bought a new paddle.", "My old paddle broke."
        assert alone.index(later) < alone.index(beside), alone
        assert lifted.index(beside) < lifted.index(later), lifted
