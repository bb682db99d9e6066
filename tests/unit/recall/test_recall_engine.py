"""RecallEngine on a real SQLite database: search, hit counting, exclusions, fetch."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from newt.recall import (
    MemoryRecord,
    RecallEngine,
    RecallRequest,
    recoverability,
)
from newt.recall.engine import fuse
from newt.recall.newer import held_terms, later_statements
from newt.recall.tuning import RecallTuning
from newt.store import Store

T = RecallTuning()
MIN_POOL, POOL_FACTOR = T.min_pool, T.pool_factor
NEIGHBOUR_SHARE = T.neighbour_share

FILLER = (
    "We went over the quarterly plan again this morning. Nothing surprising came up. "
    "The team asked whether the review queue could move faster. "
)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "newt.db") as opened:
        yield opened


async def add_turn(store: Store, conv_id: str, user: str, assistant: str) -> str:
    turn_id = await store.turns.add_pending(conv_id, user)
    await store.turns.complete(turn_id, assistant)
    return f"t{turn_id}"


async def fts_is_consistent(store: Store) -> bool:
    # Raises "database disk image is malformed" if the index disagrees with its content.
    await store.db.conn.execute("INSERT INTO memory_fts(memory_fts) VALUES('integrity-check')")
    return True


async def access_counts(store: Store) -> dict[str, int]:
    cur = await store.db.conn.execute("SELECT key, access_count FROM memory_records")
    return {row[0]: row[1] for row in await cur.fetchall()}


async def keys(engine: RecallEngine, query: str) -> list[str]:
    response = await engine.recall(RecallRequest(query))
    return [m.key for m in response.memories]


def reply_key(key: str) -> str:
    """The key of the reply of the turn whose user message is `key`."""
    return "r" + key[1:]


async def test_completed_turns_are_searchable_verbatim(store: Store) -> None:
    conv = await store.conversations.create()
    key = await add_turn(store, conv.id, "Where is the Vellmar depot?", "On Harbour Road, gate 4.")
    await add_turn(store, conv.id, "Tell me a joke", "Why did the chicken cross the road?")
    engine = RecallEngine(store)

    response = await engine.recall(RecallRequest("vellmar depot"))
    # the user's message is the hit; its reply joins it as its neighbour
    assert [m.key for m in response.memories] == [key, reply_key(key)]
    record, reply = response.memories
    assert isinstance(record, MemoryRecord)
    assert record.content == "Where is the Vellmar depot?"  # the user's words only
    assert (record.role, record.turn_id) == ("user", int(key[1:]))
    assert record.source == "turn" and record.conversation_id == conv.id
    assert reply.content == "On Harbour Road, gate 4." and reply.role == "assistant"
    assert record.score > 0  # a fused rank score: higher is better
    assert reply.score == pytest.approx(record.score * NEIGHBOUR_SHARE)
    assert response.retained_evidence is None


async def test_ranking_is_best_first(store: Store) -> None:
    weak = await store.records.add("n1", "note", "the depot is somewhere north " + FILLER)
    strong = await store.records.add("n2", "note", "Vellmar depot: the Vellmar depot code.")
    assert weak and strong
    response = await RecallEngine(store).recall(RecallRequest("vellmar depot north"))
    assert [m.key for m in response.memories] == ["n2", "n1"]
    assert response.memories[0].score > response.memories[1].score


async def test_search_survives_close_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "newt.db"
    async with await Store.open(path) as store:
        conv = await store.conversations.create()
        key = await add_turn(store, conv.id, "Remember the code 4471-KQ", "Noted: 4471-KQ.")
    async with await Store.open(path) as store:
        # both messages hold the code: both are found
        assert set(await keys(RecallEngine(store), "what was 4471-KQ")) == {key, reply_key(key)}
        assert await fts_is_consistent(store)


async def test_deleting_a_conversation_removes_its_records(store: Store) -> None:
    gone = await store.conversations.create()
    kept = await store.conversations.create()
    gone_key = await add_turn(store, gone.id, "orchid watering", "Every four days.")
    kept_key = await add_turn(store, kept.id, "orchid light", "Bright, indirect.")
    compaction = await store.turns.add_compaction(
        gone.id, "Summary: orchid care notes", resident_turns=0, used_after=10
    )
    engine = RecallEngine(store)
    assert set(await keys(engine, "orchid")) == {
        gone_key,
        reply_key(gone_key),
        kept_key,
        reply_key(kept_key),
        f"c{compaction}",
    }

    await store.conversations.delete(gone.id)
    assert await keys(engine, "orchid") == [kept_key, reply_key(kept_key)]
    assert await engine.fetch(gone_key) is None
    assert await engine.fetch(reply_key(gone_key)) is None
    assert await fts_is_consistent(store)


async def test_notes_are_records_and_follow_replace_and_remove(store: Store) -> None:
    await store.notes.add("My locker combination is 12-34-56")
    engine = RecallEngine(store)
    assert await keys(engine, "locker combination") == ["n1"]

    await store.notes.replace("My locker combination is 12-34-56", "The bike lock code is 9090")
    assert await keys(engine, "locker combination") == []
    assert await keys(engine, "bike lock") == ["n1"]
    assert await fts_is_consistent(store)

    await store.notes.remove("The bike lock code is 9090")
    assert await keys(engine, "bike lock") == []
    assert await fts_is_consistent(store)


async def test_hits_are_counted_on_exactly_the_returned_records(store: Store) -> None:
    for i in range(1, 5):
        await store.records.add(f"n{i}", "note", f"apple {'apple ' * i}pie number {i}")
    await store.records.add("n9", "note", "nothing about fruit")
    engine = RecallEngine(store)

    first = await engine.recall(RecallRequest("apple", limit=2))
    returned = [m.key for m in first.memories]
    assert len(returned) == 2
    # Reported after the increment: the count includes this recall.
    assert [m.access_count for m in first.memories] == [1, 1]
    counts = await access_counts(store)
    assert {k for k, n in counts.items() if n == 1} == set(returned)
    assert sum(counts.values()) == 2

    second = await engine.recall(RecallRequest("apple", limit=2))
    assert [m.access_count for m in second.memories] == [2, 2]
    assert sum((await access_counts(store)).values()) == 4


@pytest.mark.parametrize(
    "query",
    [
        '"foo" AND (bar',
        "*",
        ":",
        "NEAR",
        "NEAR(foo bar, 2)",
        '"',
        '"unbalanced',
        "(((",
        "foo*",
        "^foo",
        "-foo",
        "content:foo",
        "foo OR",
        "AND",
        "NOT foo",
        "'; DROP TABLE memory_records; --",
        "🙂 日本語 foo",
        "foo " * 500,
    ],
)
async def test_fts_syntax_in_the_query_never_raises(store: Store, query: str) -> None:
    await store.records.add("n1", "note", "foo and bar walk into a bar")
    response = await RecallEngine(store).recall(RecallRequest(query, retained_token_budget=100))
    assert response.retained_evidence is not None
    assert [m.key for m in response.memories] in ([], ["n1"])
    assert await store.records.count() == 1


async def test_syntax_words_still_find_their_records(store: Store) -> None:
    await store.records.add("n1", "note", "foo and bar walk into a bar")
    assert await keys(RecallEngine(store), '"foo" AND (bar') == ["n1"]


@pytest.mark.parametrize("query", ["", "   ", "\n\t", "?!.,"])
async def test_a_query_without_words_is_empty(store: Store, query: str) -> None:
    await store.records.add("n1", "note", "anything at all")
    engine = RecallEngine(store)
    assert (await engine.recall(RecallRequest(query))).memories == []
    response = await engine.recall(RecallRequest(query, retained_token_budget=500))
    assert response.memories == []
    assert response.retained_evidence is not None
    assert response.retained_evidence.capsules == []
    assert sum((await access_counts(store)).values()) == 0


async def test_zero_limit_returns_nothing(store: Store) -> None:
    await store.records.add("n1", "note", "apple")
    assert await keys(RecallEngine(store), "apple") == ["n1"]
    assert (await RecallEngine(store).recall(RecallRequest("apple", limit=0))).memories == []


async def test_excluded_records_are_neither_returned_nor_counted(store: Store) -> None:
    for i in range(1, 6):
        await store.records.add(f"n{i}", "note", f"kiwi {'kiwi ' * (6 - i)}smoothie number {i}")
    engine = RecallEngine(store)
    response = await engine.recall(
        RecallRequest("kiwi", limit=3), exclude_keys={"n1", "n2", "unknown-key"}
    )
    assert [m.key for m in response.memories] == ["n3", "n4", "n5"]  # limit still filled
    counts = await access_counts(store)
    assert counts["n1"] == counts["n2"] == 0
    assert counts["n3"] == counts["n4"] == counts["n5"] == 1


async def test_fetch_returns_the_full_record_verbatim(store: Store) -> None:
    content = 'Line one.\n  Indented "quoted" line — with ünïcode and trailing spaces   '
    await store.records.add("n1", "note", content)
    engine = RecallEngine(store)
    record = await engine.fetch("n1")
    assert record is not None and record.content == content and record.key == "n1"
    assert record.access_count == 0  # fetching is not a retrieval hit
    assert await engine.fetch("t999") is None


async def test_budgeted_recall_returns_query_aware_capsules(store: Store) -> None:
    fact = "The access code for the Vellmar depot is 4471-KQ."
    content = FILLER * 4 + fact + " " + FILLER * 4
    now = time.time()
    await store.records.add("n1", "note", content, created_at=now - 48 * 3600)
    await store.records.add("n2", "note", "The depot closes at noon. " + FILLER, created_at=now)
    engine = RecallEngine(store)

    response = await engine.recall(
        RecallRequest("What code opens the Vellmar depot?", retained_token_budget=200), now=now
    )
    report = response.retained_evidence
    assert report is not None
    assert {c.retrieval_key for c in report.capsules} == {m.key for m in response.memories}
    assert report.retained_tokens <= 200
    capsule = next(c for c in report.capsules if c.id == "n1")
    assert fact in capsule.excerpt and capsule.excerpt in content
    # Candidates carry the record's age and its count after this hit.
    assert capsule.recoverability == pytest.approx(recoverability(48.0, 1))
    # The retrieval key recovers the full record.
    full = await engine.fetch(capsule.retrieval_key)
    assert full is not None and full.content == content


async def test_engine_accepts_the_database_too(store: Store) -> None:
    await store.records.add("n1", "note", "plum jam")
    assert await keys(RecallEngine(store.db), "plum") == ["n1"]


async def _many(store: Store, rows: list[tuple[str, str]]) -> None:
    async with store.db.transaction() as conn:
        await conn.executemany(
            "INSERT INTO memory_records(key, source, content, created_at) VALUES (?, 'note', ?, ?)",
            [(key, content, 1000.0 + i) for i, (key, content) in enumerate(rows)],
        )


async def test_large_store_plan_ranks_rare_word_records_exactly(store: Store) -> None:
    # "alpha" is in every record (common); "zeta" in three (rare).
    rows = [(f"n{i}", f"alpha entry {i} " + "alpha " * (i % 3)) for i in range(200)]
    # (each record distinct: the same words twice would be one fact, see dedupe.py)
    rows += [(f"z{i}", f"zeta {i} alpha " + "alpha " * i + "zeta " * (3 - i)) for i in range(3)]
    await _many(store, rows)
    exact = RecallEngine(store, max_scored=100_000)
    cheap = RecallEngine(store, max_scored=50)  # 203 records > 50: the large-store plans

    want = (await exact.recall(RecallRequest("zeta alpha", limit=3))).memories
    got = (await cheap.recall(RecallRequest("zeta alpha", limit=3))).memories
    assert [m.key for m in got] == [m.key for m in want] == ["z0", "z1", "z2"]
    assert [m.score for m in got] == pytest.approx([m.score for m in want])
    # Records with only the common word are not candidates on a large store.
    assert len((await cheap.recall(RecallRequest("zeta alpha", limit=8))).memories) == 3


async def test_large_store_with_only_common_words_scores_the_newest(store: Store) -> None:
    rows = [(f"n{i}", ("alpha beta" if i % 2 else "alpha gamma") + f" {i}") for i in range(300)]
    await _many(store, rows)
    engine = RecallEngine(store, max_scored=40)  # scores the newest 10 matches
    found = (await engine.recall(RecallRequest("alpha beta", limit=20))).memories
    assert found and all("beta" in m.content for m in found)  # all words first
    assert {m.key for m in found} <= {f"n{i}" for i in range(281, 300, 2)}
    only_any = (await engine.recall(RecallRequest("beta gamma", limit=20))).memories
    assert len(only_any) == 10  # nothing holds both: any word, newest ten
    assert {m.key for m in only_any} == {f"n{i}" for i in range(290, 300)}


DAY = 86_400.0
START = 1_700_000_000.0


async def said_turn(store: Store, conv_id: str, user: str, assistant: str, at: float) -> int:
    """A completed turn said at `at` (the store's clock stamps it)."""
    store.db.clock = lambda: at
    turn_id = await store.turns.add_pending(conv_id, user)
    await store.turns.complete(turn_id, assistant)
    return turn_id


async def test_lexical_scores_are_shares_of_the_best(store: Store) -> None:
    # Without an embedder the score is the record's bm25 as a share of the best's.
    await store.records.add("n1", "note", "the depot is somewhere north " + FILLER)
    await store.records.add("n2", "note", "Vellmar depot: the Vellmar depot code.")
    response = await RecallEngine(store).recall(RecallRequest("vellmar depot north"))
    assert [m.key for m in response.memories] == ["n2", "n1"]
    best, other = (m.score for m in response.memories)
    assert best == pytest.approx(1.0) and 0.0 < other < 1.0


def test_fusion_weighs_both_rankings_by_score() -> None:
    lexical = [(1, -9.0), (2, -3.0), (3, -1.0)]  # bm25: lower is better
    nearest = [(3, 0.8), (4, 0.4)]  # cosine: higher is better
    fused = dict(fuse(lexical, nearest, 0.5))
    assert fused[1] == pytest.approx(0.5)  # words only, the best there
    assert fused[3] == pytest.approx(0.5 * 1 / 9 + 0.5)  # in both: words and the best meaning
    assert fused[4] == pytest.approx(0.25)
    assert [rowid for rowid, _ in fuse(lexical, nearest, 0.5)][:2] == [3, 1]
    # words alone: their order, the best scoring 1
    assert fuse(lexical, [], 0.5) == pytest.approx([(1, 1.0), (2, 3 / 9), (3, 1 / 9)])


async def test_the_candidate_pool_is_at_least_min_pool(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    matches = (MIN_POOL // POOL_FACTOR + 10) * POOL_FACTOR + 20  # more than either pool
    await _many(store, [(f"n{i}", f"walnut number {i}") for i in range(matches)])
    engine = RecallEngine(store)
    loaded: list[int] = []
    real_load = engine._load

    async def spy(ranked: list[tuple[int, float]], *rest: Any) -> list[MemoryRecord]:
        loaded.append(len(ranked))
        return await real_load(ranked, *rest)

    monkeypatch.setattr(engine, "_load", spy)
    assert len((await engine.recall(RecallRequest("walnut", limit=2))).memories) == 2
    big = (MIN_POOL // POOL_FACTOR) + 10  # its pool is limit * POOL_FACTOR > MIN_POOL
    assert len((await engine.recall(RecallRequest("walnut", limit=big))).memories) == big
    assert loaded == [MIN_POOL, big * POOL_FACTOR]


async def test_a_users_message_brings_its_reply_and_the_reply_before_it(store: Store) -> None:
    conv = await store.conversations.create()
    other = await store.conversations.create()
    first = await said_turn(store, conv.id, "I am planning a trip.", "Where are you going?", START)
    # another conversation in between: not a neighbour
    await said_turn(store, other.id, "Any plans today?", "Just reading.", START + 10)
    hit = await said_turn(store, conv.id, "To Lisbon, in May.", "May is lovely there.", START + 20)
    await said_turn(store, conv.id, "Thanks!", "You are welcome.", START + 30)
    response = await RecallEngine(store).recall(RecallRequest("lisbon"))
    got = {m.key: m.score for m in response.memories}
    assert set(got) == {f"t{hit}", f"r{hit}", f"r{first}"}
    assert got[f"r{hit}"] == pytest.approx(got[f"t{hit}"] * NEIGHBOUR_SHARE)
    assert got[f"r{first}"] == pytest.approx(got[f"t{hit}"] * NEIGHBOUR_SHARE)


async def test_a_reply_brings_its_message_and_the_next_message(store: Store) -> None:
    conv = await store.conversations.create()
    before = await said_turn(store, conv.id, "Hello there.", "Hi! How can I help?", START)
    hit = await said_turn(store, conv.id, "Where to eat?", "Try the Zanzibar cafe.", START + 10)
    after = await said_turn(store, conv.id, "Is it open late?", "Until midnight.", START + 20)
    await said_turn(store, conv.id, "Great.", "Enjoy!", START + 30)
    response = await RecallEngine(store).recall(RecallRequest("zanzibar"))
    got = {m.key: m.score for m in response.memories}
    assert set(got) == {f"r{hit}", f"t{hit}", f"t{after}"}
    assert f"r{before}" not in got and f"r{after}" not in got
    assert got[f"t{after}"] == pytest.approx(got[f"r{hit}"] * NEIGHBOUR_SHARE)


async def test_excluded_neighbours_stay_out(store: Store) -> None:
    conv = await store.conversations.create()
    hit = await said_turn(store, conv.id, "My cat is called Mochi.", "Cute name!", START)
    response = await RecallEngine(store).recall(RecallRequest("mochi"), exclude_keys={f"r{hit}"})
    assert [m.key for m in response.memories] == [f"t{hit}"]


async def test_an_excluded_later_statement_is_not_brought(store: Store) -> None:
    await store.records.add("n1", "note", "The locker code is 4417.", created_at=START)
    await store.records.add("n2", "note", "New locker: 9941.", created_at=START + DAY)
    engine = RecallEngine(store)
    response = await engine.recall(RecallRequest("locker code"), exclude_keys={"n2"})
    assert [m.key for m in response.memories] == ["n1"]


async def test_said_since_is_the_oldest_message_of_the_keys(store: Store) -> None:
    conv = await store.conversations.create()
    old = await said_turn(store, conv.id, "first", "one", START)
    new = await said_turn(store, conv.id, "second", "two", START + DAY)
    await store.records.add("n1", "note", "a note", created_at=START - DAY)
    engine = RecallEngine(store)
    assert await engine.said_since({f"t{new}", f"r{new}"}) == START + DAY
    assert await engine.said_since({f"r{old}", f"t{new}", "n1"}) == START  # notes do not count
    assert await engine.said_since({"n1"}) is None
    assert await engine.said_since(set()) is None


async def test_every_old_statement_links_to_the_newest_sharing_a_query_word(store: Store) -> None:
    # The correction shares the subject ("sister"), not the rarest word ("lives"),
    # with the old lines: each old line (and the reply beside it) still links to it.
    conv = await store.conversations.create()
    olds = [
        await said_turn(store, conv.id, text, "Tromsø sounds lovely.", START + i)
        for i, text in enumerate(
            [
                "My sister lives in Tromsø now.",
                "My sister lives close to the Tromsø bridge.",
                "Yes, my sister loves Tromsø, she lives near the harbour.",
                "My sister took me round Tromsø, where she lives, the whole weekend.",
            ]
        )
    ]
    fix = await said_turn(store, conv.id, "Actually my sister moved to Bergen.", "Oh!", START + DAY)
    engine = RecallEngine(store)
    found = (await engine.recall(RecallRequest("Where does my sister live now?", limit=4))).memories
    keys = [m.key for m in found]
    assert f"t{fix}" in keys and len(keys) == 4  # it comes within the limit
    links = {m.key: m.newer_key for m in found}
    for turn in olds:
        if f"t{turn}" in links:
            assert links[f"t{turn}"] == f"t{fix}"
    assert all(m.newer_key == f"t{fix}" for m in found if m.key.startswith("r"))


async def test_a_word_in_most_of_the_store_links_nothing(store: Store) -> None:
    # A transcript's speaker name opens half its lines: it says nothing about
    # which thing a line is about, so it does not link an old line to the newest
    # line that happens to hold it. A word only its topic's lines hold still links.
    for i in range(300):
        at = START + 2 * DAY + i  # said after both turtle lines
        await store.records.add(f"n{i}", "note", f"Nate: filler line {i}.", created_at=at)
    await store.records.add("old", "note", "Nate: my turtles live in a tank.", created_at=START)
    await store.records.add(
        "new", "note", "Nate: the turtles moved outside.", created_at=START + DAY
    )
    engine = RecallEngine(store)
    found = (await engine.recall(RecallRequest("Nate turtles", limit=8))).memories
    links = {m.key: m.newer_key for m in found}
    assert links["old"] == "new"
    assert all(link in (None, "new") for link in links.values())  # never the newest "Nate" line
    terms = ["nate", "turtles"]
    linking = engine.newer_statements.linking_terms
    assert await linking(held_terms(found, terms), terms) == ["turtles"]
    small = [m for m in found if m.key in ("old", "new")]  # few candidates, all with "nate"
    assert await linking(held_terms(small, terms), terms) == ["turtles"]


async def test_in_a_small_store_a_topic_word_still_links(store: Store) -> None:
    await store.records.add("old", "note", "My sister lives in Tromsø.", created_at=START)
    await store.records.add("new", "note", "My sister moved to Bergen.", created_at=START + DAY)
    engine = RecallEngine(store)
    found = (await engine.recall(RecallRequest("sister"))).memories
    held = held_terms(found, ["sister"])
    assert await engine.newer_statements.linking_terms(held, ["sister"]) == ["sister"]
    assert {m.key: m.newer_key for m in found}["old"] == "new"


def test_a_record_links_straight_to_the_end_of_its_chain() -> None:
    def rec(i: int, text: str) -> MemoryRecord:
        return MemoryRecord(i, f"n{i}", "note", None, text, 0, START + i, said_at=START + i)

    a = rec(1, "the locker by the gym")
    b = rec(2, "the locker code changed")  # newer than a: shares "locker"
    c = rec(3, "the code is now 9941")  # newer than b: shares "code", not a's word
    later = later_statements([a, b, c], held_terms([a, b, c], ["locker", "code"]))
    assert later[a.id] is c and later[b.id] is c and c.id not in later


def test_a_newer_statement_is_about_the_question_too() -> None:
    # A later record that holds fewer than half of the question's words (one
    # word in passing) is no newer statement of an answer to it.
    def rec(i: int, text: str) -> MemoryRecord:
        return MemoryRecord(i, f"n{i}", "note", None, text, 0, START + i, said_at=START + i)

    old = rec(1, "we work out as a family often, three times a week")
    passing = rec(5, "the yoga studio I go to often")
    answer = rec(3, "the family work-outs are twice a week now")
    words = ["often", "family", "work"]
    cands = [old, answer, passing]
    assert later_statements(cands, held_terms(cands, words))[old.id] is answer
