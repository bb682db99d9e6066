"""Near misses are left out of recall: a record holding only part of the query
words a better-ranked record holds (the cedar harbor's code when the amber
harbor's is asked for)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from newt.recall import RecallEngine, RecallRequest
from newt.recall.near_misses import drop_near_misses, words_held
from newt.recall.presentation import evidence_block
from newt.store import Store
from newt.store.models import MemoryRecord

TERMS = ["locker", "code", "amber", "harbor"]


def _record(i: int, content: str, score: float) -> MemoryRecord:
    return MemoryRecord(i, f"t{i}", "turn", "c", content, 0, float(i), score)


AMBER = _record(1, "User: The locker code for the amber harbor is 4417.", 9.0)
CEDAR = _record(2, "User: The locker code for the cedar harbor is 9941.", 5.0)


def test_words_held_are_the_query_words_in_the_record() -> None:
    assert words_held(AMBER.content, TERMS) == {"locker", "code", "amber", "harbor"}
    assert words_held(CEDAR.content, TERMS) == {"locker", "code", "harbor"}
    assert words_held("User: gate 4 of the pier", ["4417", "gate"]) == {"gate"}


def test_a_word_the_index_matched_by_its_stem_is_held() -> None:
    # FTS5 (porter) finds "news" for "new": that record holds "new" and no other
    # word, so it is a near miss of the record holding all three, not a record
    # found by meaning alone
    weather = "User: What is weather? The news keeps mixing it up."
    assert words_held(weather, ["codename", "new", "project"]) == {"new"}
    assert words_held("User: the harbours", ["harbour", "harbor"]) == {"harbour"}
    fact = _record(1, "User: The codename of our new project is moonpetal.", 3.0)
    kept, left_out = drop_near_misses(
        [fact, _record(2, weather, 4.0)], ["codename", "new", "project"]
    )
    assert [r.key for r in kept] == ["t1"] and left_out == ["t2"]


def test_a_record_holding_part_of_the_best_ones_words_is_left_out() -> None:
    kept, left_out = drop_near_misses([AMBER, CEDAR], TERMS)
    assert [r.key for r in kept] == ["t1"]
    assert left_out == ["t2"]


def test_a_near_miss_ranked_above_the_fact_is_left_out_too() -> None:
    # bm25 favours the short near miss, or it took the rank of its echo
    cedar_first = _record(2, CEDAR.content, 12.0)
    kept, left_out = drop_near_misses([cedar_first, AMBER], TERMS)
    assert [r.key for r in kept] == ["t1"] and left_out == ["t2"]


def test_other_words_same_words_and_meaning_only_records_are_kept() -> None:
    other_half = _record(3, "User: The amber harbor's lockers take the new key card.", 4.0)
    update = _record(4, "User: Locker code at the amber harbor: now 5521 (harbor office).", 3.0)
    by_meaning = _record(5, "User: My boat shed combination is 2208.", 1.0)
    extra = ["locker", "code", "amber", "harbor", "card"]
    kept, left_out = drop_near_misses([AMBER, CEDAR, other_half, update, by_meaning], extra)
    # other_half holds "card", which the fact lacks; the update holds the same
    # words as the fact; by_meaning holds none of them (found by an embedding)
    assert [r.key for r in kept] == ["t1", "t3", "t4", "t5"]
    assert left_out == ["t2"]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "newt.db") as opened:
        yield opened


async def test_the_asked_fact_reaches_the_prompt_without_its_near_miss(store: Store) -> None:
    conv = await store.conversations.create()
    keys = []
    for said in (
        "Note for later: The locker code for the amber harbor is 4417.",
        "The locker code for the cedar harbor is 9941. After that I went home.",
        "The harbor cafe makes good soup.",
    ):
        turn_id = await store.turns.add_pending(conv.id, said)
        await store.turns.complete(turn_id, "Noted.")
        keys.append(f"t{turn_id}")
    engine = RecallEngine(store)
    question = "What is the locker code for the amber harbor?"
    response = await engine.recall(RecallRequest(question, retained_token_budget=1024))
    assert [m.key for m in response.memories] == [keys[0]]
    report = response.retained_evidence
    assert report is not None
    block = evidence_block(report)
    assert "4417" in block and "9941" not in block and "soup" not in block
    # asked for the cedar harbor, the amber fact is the near miss
    response = await engine.recall(RecallRequest("And the locker code for the cedar harbor?"))
    assert [m.key for m in response.memories] == [keys[1]]
    # and still once an echo of the amber fact is stored too
    echo = await store.turns.add_pending(conv.id, "What is the locker code for the harbor?")
    await store.turns.complete(echo, "The locker code for the amber harbor is 4417.")
    response = await engine.recall(RecallRequest("What is the locker code for the cedar harbor?"))
    assert [m.key for m in response.memories] == [keys[1]]
