"""Capsules presented by relevance; one capsule per fact; failed turns never recalled."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from newt.config import ConfigError, load_config
from newt.recall import (
    EvidenceCapsule,
    RecallEngine,
    RecallRequest,
    RetentionCandidate,
    RetentionReport,
    retain_within_budget,
)
from newt.recall.dedupe import drop_repeats
from newt.recall.presentation import (
    EVIDENCE_HEADER,
    FOCUSED_HEADER,
    by_relevance,
    capsule_text,
    evidence_block,
    ordered,
)
from newt.recall.retention import speaker_at
from newt.store import Store
from newt.store.models import MemoryRecord

FACT = "the locker code for the amber harbor is 4417"
# Each holds a word of the question the fact lacks ("sundays"), so none is a
# near miss of it (see near_misses.py) and all are recalled beside it.
OTHER_FACTS = [
    "on sundays the gate code for the blue pier is 8812",
    "my locker at the gym is number 31, open on sundays",
    "the harbor master is called Ilse Brandt and works sundays",
]
QUESTION = "What is the locker code for the amber harbor I use on sundays?"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "newt.db") as opened:
        yield opened


async def _turn(store: Store, conv_id: str, user: str, assistant: str = "Noted.") -> str:
    turn_id = await store.turns.add_pending(conv_id, user)
    await store.turns.complete(turn_id, assistant)
    return f"t{turn_id}"


def _capsule(key: str, score: float, rec: float) -> EvidenceCapsule:
    return EvidenceCapsule(key, key, f"excerpt {key}", 5, rec, score)


def test_capsules_are_shown_best_match_first_whatever_the_packing_order() -> None:
    # Packing order (recoverability) puts the best match 3rd, as in issue 10.
    capsules = [_capsule("t1", 2.0, 0.9), _capsule("t2", 1.0, 0.8), _capsule("t3", 9.0, 0.1)]
    assert [c.id for c in by_relevance(capsules)] == ["t3", "t1", "t2"]
    assert [c.id for c in ordered(capsules, "best_first")] == ["t3", "t1", "t2"]
    assert [c.id for c in ordered(capsules, "best_last")] == ["t2", "t1", "t3"]
    assert [c.id for c in ordered(capsules, "packed")] == ["t1", "t2", "t3"]
    with pytest.raises(ValueError, match="best_first"):
        ordered(capsules, "random")  # type: ignore[arg-type]


def test_equal_scores_keep_the_packing_order() -> None:
    capsules = [_capsule("a", 1.0, 0.9), _capsule("b", 1.0, 0.5), _capsule("c", 1.0, 0.1)]
    assert [c.id for c in by_relevance(capsules)] == ["a", "b", "c"]


def test_evidence_block_text() -> None:
    report = RetentionReport(100, 10, [_capsule("t1", 1.0, 0.5), _capsule("t2", 3.0, 0.9)])
    assert evidence_block(report) == (
        EVIDENCE_HEADER
        + "\n- excerpt t2\n- excerpt t1\n"
        + "Full records, if needed: fetch_record with key t2, t1.\n\n"
    )
    assert evidence_block(report, keys=False) == (
        EVIDENCE_HEADER + "\n- excerpt t2\n- excerpt t1\n\n"
    )
    assert evidence_block(report, "best_last", keys=False).endswith("- excerpt t2\n\n")
    assert evidence_block(None) == ""
    assert evidence_block(RetentionReport(100, 0, [])) == ""


TURN = "User: My flight to Lisbon leaves from gate E33.\nAssistant: Have a good trip."


@pytest.mark.parametrize(
    ("excerpt", "shown"),
    [
        (
            TURN,
            "The user said: My flight to Lisbon leaves from gate E33. "
            "/ You replied: Have a good trip.",
        ),
        (
            "My flight to Lisbon leaves from gate E33.",
            "The user said: My flight to Lisbon leaves from gate E33.",
        ),
        (
            "leaves from gate E33.\nAssistant: Have a",
            "The user said: leaves from gate E33. / You replied: Have a",
        ),
        ("Have a good trip.", "You replied: Have a good trip."),
    ],
)
def test_each_capsule_says_who_said_it(excerpt: str, shown: str) -> None:
    """A small model reads "User:/Assistant:" as a transcript to continue and
    copies "[t4]" keys into its answer; a plain "who said it" line it uses."""
    candidate = RetentionCandidate("t4", TURN, access_count=0, age_hours=1.0)
    assert excerpt in TURN
    report = retain_within_budget([candidate], 1000)
    capsule = report.capsules[0]
    assert capsule.speaker == "user"
    capsule.excerpt = excerpt
    capsule.speaker = speaker_at(TURN, excerpt)
    assert capsule_text(capsule) == shown


def test_a_focused_block_speaks_in_the_users_voice() -> None:
    """A focused question's evidence reads as the user reminding the model:
    their own words bare under "Earlier I told you:", the rest still named."""
    turn = RetentionCandidate("t4", TURN, access_count=0, age_hours=1.0)
    note = RetentionCandidate("n2", "likes green tea", access_count=0, age_hours=1.0)
    report = retain_within_budget([turn, note], 1000)
    block = evidence_block(report, "packed", keys=False, focused=True)
    assert block == (
        FOCUSED_HEADER
        + "\n- My flight to Lisbon leaves from gate E33. / You replied: Have a good trip."
        + "\n- A note you saved: likes green tea\n\n"
    )
    assert "The user said" not in block and "reference" not in block


def test_notes_summaries_and_tool_results_are_named() -> None:
    def text(key: str) -> str:
        return capsule_text(EvidenceCapsule(key, key, "likes tea", 3, 0.5))

    assert text("n3") == "A note you saved: likes tea"
    assert text("c9") == "A summary of earlier turns: likes tea"
    assert text("t5.1") == "A tool returned: likes tea"


def test_packing_keeps_its_rules_and_carries_the_retrieval_score() -> None:
    candidates = [
        RetentionCandidate(
            "t1", "old but often hit " * 3, access_count=9, age_hours=1.0, retrieval_score=1.0
        ),
        RetentionCandidate("t2", FACT, access_count=0, age_hours=1.0, retrieval_score=7.5),
    ]
    report = retain_within_budget(candidates, 1000)
    assert [c.id for c in report.capsules] == ["t1", "t2"]  # recoverability decides packing
    assert [c.retrieval_score for c in report.capsules] == [1.0, 7.5]
    assert [c.id for c in by_relevance(report.capsules)] == ["t2", "t1"]


async def test_recall_presents_the_asked_fact_first(store: Store) -> None:
    conv = await store.conversations.create()
    fact_key = await _turn(store, conv.id, f"Please remember: {FACT}.")
    for fact in OTHER_FACTS:
        await _turn(store, conv.id, f"Please remember: {fact}.")
    engine = RecallEngine(store)
    # Other facts get recalled often, so they are the more recoverable.
    for _ in range(5):
        await engine.recall(RecallRequest("gate code blue pier locker gym harbor master"))
    response = await engine.recall(RecallRequest(QUESTION, retained_token_budget=1024))
    report = response.retained_evidence
    assert report is not None and len(report.capsules) >= 3
    assert report.capsules[0].id != fact_key  # packing order alone would bury it
    block = evidence_block(report)
    assert block.splitlines()[1].startswith("- The user said: Please remember")
    assert "4417" in block.splitlines()[1]
    assert block.count("\n- ") == len(report.capsules)  # the others follow
    keys = [c.retrieval_key for c in by_relevance(report.capsules)]
    assert keys[0] == fact_key
    assert (
        block.rstrip("\n").splitlines()[-1]
        == f"Full records, if needed: fetch_record with key {', '.join(keys)}."
    )
    last = evidence_block(report, "best_last", keys=False).rstrip("\n").rsplit("\n- ", 1)[1]
    assert "4417" in last


def _record(i: int, content: str, score: float) -> MemoryRecord:
    return MemoryRecord(i, f"t{i}", "turn", "c", content, 0, float(i), score)


def test_a_reply_repeating_a_fact_yields_to_the_original() -> None:
    original = _record(3, f"User: {FACT}\nAssistant: Got it, noted.", 4.0)
    echo = _record(
        40,
        "User: What's the locker code at amber harbor?\n"
        "Assistant: The locker code for the amber harbor is 4417.",
        9.0,  # repeats the question's words: ranks above the original
    )
    other = _record(20, "User: the gate code for the blue pier is 8812", 2.0)
    kept, dups = drop_repeats([echo, original, other], ["locker", "code", "amber", "harbor"])
    assert [r.key for r in kept] == ["t3", "t20"]
    assert kept[0].score == 9.0  # the original takes its echo's place
    assert [(d.key, d.original) for d in dups] == [("t40", "t3")]


def test_a_compaction_record_repeating_a_turn_yields_to_the_turn() -> None:
    turn = _record(3, f"User: By the way, {FACT}.\nAssistant: Noted!", 3.0)
    summary = _record(
        30,
        "[CONTEXT COMPACTION — REFERENCE ONLY]\n- Locker codes: amber harbor locker code 4417.\n"
        "- The user likes sailing.",
        5.0,
    )
    kept, _ = drop_repeats([summary, turn], ["locker", "codes", "amber", "harbor"])
    assert [r.key for r in kept] == ["t3"]


def test_a_question_with_an_empty_answer_is_a_repeat_but_a_new_fact_is_not() -> None:
    original = _record(3, f"User: {FACT}", 1.0)
    asked = _record(
        50,
        "User: what is the locker code for the amber harbor?\n"
        "Assistant: I don't know the locker code for the amber harbor.",
        6.0,
    )
    changed = _record(60, "User: the locker code for the amber harbor is now 5521", 5.0)
    wrong = _record(70, "User: locker code amber harbor?\nAssistant: It is 4471.", 4.0)
    kept, _ = drop_repeats([asked, changed, wrong, original], ["locker", "code", "amber"])
    assert [r.key for r in kept] == ["t3", "t60", "t70"]


def test_short_words_must_match_whole() -> None:
    original = _record(1, "User: the gate code is 4417", 1.0)
    other = _record(2, "User: the gate code is 4", 1.0)
    kept, _ = drop_repeats([original, other], ["gate", "code"])
    assert [r.key for r in kept] == ["t1", "t2"]


async def test_the_same_fact_from_a_turn_and_its_compaction_is_one_capsule(store: Store) -> None:
    conv = await store.conversations.create()
    fact_key = await _turn(store, conv.id, f"Please remember that {FACT}.", "I will remember.")
    await _turn(store, conv.id, "Tell me about tides.", "Tides follow the moon.")
    await store.turns.add_compaction(
        conv.id,
        f"[CONTEXT COMPACTION — REFERENCE ONLY]\nUser: Please remember that {FACT}.\n"
        "Assistant: I will remember.\nUser: Tell me about tides.",
        resident_turns=0,
        used_after=10,
    )
    await _turn(
        store,
        conv.id,
        "What is the locker code for the amber harbor?",
        "The locker code for the amber harbor is 4417.",
    )
    response = await RecallEngine(store).recall(
        RecallRequest("locker code amber harbor?", retained_token_budget=1024)
    )
    assert [m.key for m in response.memories] == [fact_key]
    report = response.retained_evidence
    assert report is not None and [c.id for c in report.capsules] == [fact_key]
    counts = await store.db.conn.execute("SELECT key, access_count FROM memory_records")
    hits = {row[0]: row[1] for row in await counts.fetchall()}
    assert sum(hits.values()) == 1 and hits[fact_key] == 1  # repeats are not counted


async def test_failed_turns_are_not_recalled(store: Store) -> None:
    conv = await store.conversations.create()
    failed = await store.turns.add_pending(conv.id, "the vault code for the cellar is 9090")
    await store.turns.fail(failed, "backend unreachable")
    pending = await store.turns.add_pending(conv.id, "the vault code for the attic is 1212")
    assert pending
    engine = RecallEngine(store)
    assert (await engine.recall(RecallRequest("vault code"))).memories == []
    assert await store.records.count() == 0


async def test_recall_config_keys(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[recall]\nembeddings = "off"\nevidence_order = "best_last"\n')
    cfg = load_config(path)
    assert cfg.recall.embeddings == "off" and cfg.recall.evidence_order == "best_last"
    assert cfg.recall.embedding_model == ""
    path.write_text('[recall]\nembeddings = "maybe"\n')
    with pytest.raises(ConfigError, match=r"recall\.embeddings"):
        load_config(path)
    path.write_text('[recall]\nevidence_order = "random"\n')
    with pytest.raises(ConfigError, match=r"recall\.evidence_order"):
        load_config(path)


def _excerpt(turn: str, query: str) -> str:
    candidate = RetentionCandidate("t4", turn, access_count=0, age_hours=1.0)
    return retain_within_budget([candidate], 1000, query=query).capsules[0].excerpt


def test_a_reply_that_matches_nothing_more_is_left_out_of_a_turns_excerpt() -> None:
    """The user's words are the source of a fact about the user; a small
    model's reply restating them can contradict them ("leaves at 21:30")."""
    turn = (
        "User: My flight to Lisbon leaves from gate E33.\n"
        "Assistant: Here is a correction: the flight to Lisbon leaves at 21:30."
    )
    assert _excerpt(turn, "Which gate does my flight to Lisbon leave from?") == (
        "User: My flight to Lisbon leaves from gate E33."
    )
    # a reply matching words the user's message lacks is kept
    advice = "User: Recommend one board game.\nAssistant: Try Azul, a strategy game."
    assert _excerpt(advice, "which strategy game did you recommend") == advice
    # words the user only asked about do not stand for the answer
    asked = "User: Where is the Vellmar depot?\nAssistant: On Harbour Road, gate 4."
    assert _excerpt(asked, "where was the vellmar depot again") == asked
