"""A turn whose two halves both match the query: each half gains a share of the other's score."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from newt.recall import MemoryRecord, RecallEngine, RecallRequest
from newt.recall.fusion import with_pairs
from newt.recall.tuning import RecallTuning
from newt.store import Store

PAIR_SHARE = RecallTuning().pair_share


def record(
    rid: int, score: float, role: str | None = "user", turn: int | None = None
) -> MemoryRecord:
    key = ("t" if role == "user" else "r") + str(turn if turn is not None else rid)
    return MemoryRecord(
        rid, key, "turn", "c", f"text {rid}", 0, 0.0, score, role,  # type: ignore[arg-type]
        turn_id=turn,
    )  # fmt: skip


def test_both_halves_of_a_turn_rise_above_a_lone_better_match() -> None:
    lone = record(1, 0.70, "user", turn=1)
    question = record(2, 0.60, "user", turn=2)
    answer = record(3, 0.50, "assistant", turn=2)
    ranked = with_pairs([lone, question, answer], 0.5)
    assert [r.id for r in ranked] == [2, 3, 1]
    assert ranked[0].score == 0.60 + 0.5 * 0.50
    assert ranked[1].score == 0.50 + 0.5 * 0.60
    assert ranked[2].score == 0.70  # its reply was not among the candidates


def test_notes_tools_and_a_share_of_zero_gain_nothing() -> None:
    note = record(1, 0.9, None, turn=None)
    tool = record(2, 0.8, "tool", turn=3)
    user = record(3, 0.7, "user", turn=3)
    assert [r.score for r in with_pairs([note, tool, user], 0.5)] == [0.9, 0.8, 0.7]
    pair = [record(4, 0.4, "user", turn=4), record(5, 0.3, "assistant", turn=4)]
    assert with_pairs(pair, 0.0) == pair


async def test_recall_ranks_an_exchange_matching_across_its_halves_first(tmp_path: Path) -> None:
    """The question's words split over a message and its reply: with pairs on
    that exchange outranks a message that matches better alone."""
    turns = [
        ("We packed the kayak and drove to the lake for the weekend trip.", "Sounds calm."),
        ("Did the kayak leak at all?", "No leak, it stayed dry the whole trip."),
    ]
    turns += [(f"Filler {i} about the garden and the weather.", f"Reply {i}.") for i in range(20)]
    async with await Store.open(tmp_path / "newt.db") as store:
        conv = await store.conversations.create()
        for user, reply in turns:
            turn = await store.turns.add_pending(conv.id, user)
            await store.turns.complete(turn, reply)
        engine = RecallEngine(store)
        query = RecallRequest("kayak weekend trip leak", limit=4)
        engine.tuning = replace(engine.tuning, pair_share=0.0)
        alone = (await engine.recall(query, count_hits=False)).memories
        engine.tuning = replace(engine.tuning, pair_share=PAIR_SHARE)
        paired = (await engine.recall(query, count_hits=False)).memories
        assert alone[0].key == "t1"  # the better match on its own
        assert paired[0].key == "t2", paired  # its reply matches too
