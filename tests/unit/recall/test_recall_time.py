"""Recall ranks what was said on the day a query names above the same words said another day."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from newt.recall import RecallEngine, RecallRequest
from newt.recall.engine import boost
from newt.recall.time_span import TimeSpan
from newt.recall.word_ranking import _merged
from newt.store import Store

MAY_8 = datetime(2023, 5, 8, 14, 0).timestamp()
JUNE_20 = datetime(2023, 6, 20, 14, 0).timestamp()
ASKED = datetime(2023, 9, 1, 9, 0).timestamp()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "newt.db") as opened:
        yield opened


async def said(store: Store, conv: str, user: str, reply: str, at: float) -> int:
    store.db.clock = lambda: at
    turn_id = await store.turns.add_pending(conv, user)
    await store.turns.complete(turn_id, reply)
    return turn_id


async def users_first(engine: RecallEngine, store: Store, query: str) -> list[str]:
    store.db.clock = lambda: ASKED
    found = await engine.recall(RecallRequest(query, limit=8), count_hits=False)
    return [m.content for m in found.memories if m.role == "user"]


async def test_the_named_day_wins_among_equal_matches(store: Store) -> None:
    conv = (await store.conversations.create()).id
    await said(store, conv, "I baked a lemon cake for the party.", "Sounds lovely.", MAY_8)
    await said(store, conv, "I baked a chocolate cake for the party.", "Yum.", JUNE_20)
    engine = RecallEngine(store)
    may = await users_first(engine, store, "What cake did I bake on 8 May 2023?")
    june = await users_first(engine, store, "What cake did I bake on June 20, 2023?")
    assert may[0] == "I baked a lemon cake for the party."
    assert june[0] == "I baked a chocolate cake for the party."
    # without a date the newer of two equal matches comes first, as before
    assert (await users_first(engine, store, "What cake did I bake?"))[0].startswith(
        "I baked a chocolate"
    )


async def test_being_said_that_day_never_lifts_a_record_that_does_not_match(store: Store) -> None:
    conv = (await store.conversations.create()).id
    await said(store, conv, "The weather was grey all afternoon.", "Indeed.", MAY_8)
    await said(store, conv, "My sister moved to Bergen, the rainy city.", "Nice.", JUNE_20)
    found = await users_first(RecallEngine(store), store, "Where did my sister move on 8 May 2023?")
    assert found == ["My sister moved to Bergen, the rainy city."]


async def test_with_the_span_weight_at_zero_dates_are_words_again(store: Store) -> None:
    conv = (await store.conversations.create()).id
    await said(store, conv, "I baked a lemon cake for the party.", "Sounds lovely.", MAY_8)
    await said(store, conv, "I baked a chocolate cake for the party.", "Yum.", JUNE_20)
    engine = RecallEngine(store)
    # (no floor either: in a two-turn store the date's words, held by no
    # record, would weigh the message apart from everything memory holds)
    engine.tuning = replace(engine.tuning, span_weight=0.0, gate_coverage=0.0, record_coverage=0.0)
    found = await users_first(engine, store, "What cake did I bake on 8 May 2023?")
    assert found[0].startswith("I baked a chocolate")  # the newer, the date ignored


def test_boost_multiplies_and_scores_unranked_records_by_their_words() -> None:
    fused = [(1, 0.9), (2, 0.5)]
    lexical = [(1, -10.0), (2, -5.0)]
    said = [(2, -5.0), (3, -2.0)]  # 3 was said then but not reached by the ranking
    scores = dict(boost(fused, lexical, said, lexical_weight=0.6, weight=1.0))
    assert scores[1] == pytest.approx(0.9)
    assert scores[2] == pytest.approx(1.0)
    assert scores[3] == pytest.approx(2 * 0.6 * 2.0 / 10.0)
    assert [rowid for rowid, _ in boost(fused, lexical, said, 0.6, 1.0)] == [2, 1, 3]


def test_overlapping_spans_are_looked_up_once() -> None:
    spans = [TimeSpan(10, 20), TimeSpan(0, 5), TimeSpan(15, 30), TimeSpan(15, 30)]
    assert _merged(spans) == [TimeSpan(0, 5), TimeSpan(10, 30)]
    assert _merged([]) == []
