"""The floor: recall carries a record only when it is related to the message,
by words alone and by words with meaning (recall/relatedness.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from newt.recall import RecallEngine, RecallRequest
from newt.recall.relatedness import coverage, related, word_weights
from newt.recall.tuning import RecallTuning
from newt.store import Store
from newt.store.models import MemoryRecord

FACTS = (
    "My sister Ingrid lives in Tromsø and works at the aquarium.",
    "I'm allergic to peanuts, so I always check labels.",
    "My dog is called Pixel and he chases seagulls.",
    "I write three pages of my novel every week.",
    "The locker code for the amber harbor is 4417.",
    "We are planning a trip to Lisbon in the spring.",
)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "newt.db") as opened:
        conv = await opened.conversations.create()
        for text in FACTS:
            turn = await opened.turns.add_pending(conv.id, text)
            await opened.turns.complete(turn, "Noted.")
        yield opened


def test_a_rare_word_weighs_more_and_one_never_said_as_one_said_once() -> None:
    weights = word_weights(100, [("sister", 3), ("write", 40), ("haiku", 0), ("fjord", 1)])
    assert weights["haiku"] == weights["fjord"] > weights["sister"] > weights["write"] > 0


def test_coverage_compares_words_as_the_index_does() -> None:
    weights = {"code": 1.0, "creme": 1.0}
    assert coverage("She was coding all night.", weights) == pytest.approx(0.5)  # stemmed
    assert coverage("Crème brûlée and codes", weights) == pytest.approx(1.0)  # folded
    assert coverage("nothing of it", weights) == 0.0
    assert coverage("anything", {}) == 0.0


def _record(rid: int, content: str) -> MemoryRecord:
    return MemoryRecord(rid, f"t{rid}", "turn", None, content, 0, 0.0)


def test_a_message_must_reach_the_gate_then_each_record_its_floor() -> None:
    tuning = RecallTuning()
    weights = {"haiku": 5.0, "write": 1.0}
    records = [_record(1, "I write a letter"), _record(2, "a quiet evening")]
    # one common word shared, nothing near in meaning: nothing is related
    assert related(records, {1: 0.2, 2: 0.1}, weights, tuning) == []
    # the message is about something memory holds (by meaning): records that
    # reach their own floor come, the rest stay out
    near = related(records, {1: 0.5, 2: 0.1}, weights, tuning)
    assert [r.id for r in near] == [1]
    # by words alone: most of the message's weight is held
    assert [r.id for r in related(records, {}, {"write": 1.0}, tuning)] == [1]


def test_a_message_about_the_user_needs_a_line_near_it_not_one_shared_word() -> None:
    # "I want to make pancakes for breakfast": the gate is reached (a line
    # near in meaning), and another line holds only the everyday "want".
    tuning = RecallTuning()
    weights = {"want": 1.0, "pancakes": 2.0, "breakfast": 1.5}
    records = [
        _record(1, "Weekend mornings we eat late, a slow breakfast with eggs."),
        _record(2, "I want to visit my sister in Tromsø."),
    ]
    cosines = {1: 0.45, 2: 0.18}
    assert coverage(records[1].content, weights) > tuning.record_coverage
    assert [r.id for r in related(records, cosines, weights, tuning)] == [1, 2]
    assert [r.id for r in related(records, cosines, weights, tuning, own=True)] == [1]
    # by words alone, the shared word is all there is: the line still comes
    by_words = related(records, {}, {"want": 1.0, "breakfast": 0.5}, tuning, own=True)
    assert [r.id for r in by_words] == [1, 2]


async def _keys(engine: RecallEngine, query: str) -> list[str]:
    found = await engine.recall(RecallRequest(query, limit=8), count_hits=False)
    return [m.key for m in found.memories]


async def test_by_words_alone_unrelated_requests_recall_nothing(store: Store) -> None:
    engine = RecallEngine(store)
    for unrelated in (
        "Write a haiku about a lighthouse in fog.",
        "Convert 350 degrees Fahrenheit to Celsius.",
        "What is the capital of Mongolia?",
        "Give me three synonyms for 'ubiquitous'.",
    ):
        assert await _keys(engine, unrelated) == [], unrelated
        block = await engine.recall(RecallRequest(unrelated, retained_token_budget=400))
        assert block.block == "" and block.retained_evidence is not None
        assert block.retained_evidence.capsules == []
    assert "t1" in await _keys(engine, "Where does my sister Ingrid live?")
    assert "t2" in await _keys(engine, "What did I say about peanuts?")


async def test_without_the_floor_the_nearest_ride_along(store: Store) -> None:
    engine = RecallEngine(store)
    assert await _keys(engine, "Write a haiku about a lighthouse in fog.") == []
    engine.tuning = replace(engine.tuning, gate_coverage=0.0, record_coverage=0.0)
    # "write" is in one record: without the floor it rides along
    assert await _keys(engine, "Write a haiku about a lighthouse in fog.") != []
