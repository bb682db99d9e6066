"""Capsules shown oldest first under the day each was said, each attributed; the
block as rendered fits its budget; failed turns never recalled."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from newt.recall import (
    EvidenceCapsule,
    RecallEngine,
    RecallRequest,
    RetentionCandidate,
    RetentionReport,
    retain_within_budget,
)
from newt.recall.presentation import (
    EVIDENCE_HEADER,
    KEYS_LINE,
    NEWER_ABOVE,
    chronological,
    evidence_block,
    fit_block,
    when,
)
from newt.recall.retention import est_tokens
from newt.store import Store

FACT = "the locker code for the amber harbor is 4417"
# Local noon, so the day does not depend on the machine's time zone.
MONDAY = datetime(2023, 5, 8, 12, 0).timestamp()  # Monday 8 May 2023
DAY = 86_400.0
NOW = MONDAY + 10 * DAY  # Thursday 18 May 2023


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "newt.db") as opened:
        yield opened


async def _turn(store: Store, conv_id: str, user: str, assistant: str = "Noted.") -> str:
    turn_id = await store.turns.add_pending(conv_id, user)
    await store.turns.complete(turn_id, assistant)
    return f"t{turn_id}"


def _capsule(
    key: str,
    said_at: float,
    role: str = "user",
    kind: str = "turn",
    score: float = 1.0,
    whole: bool = True,
) -> EvidenceCapsule:
    return EvidenceCapsule(key, key, f"excerpt {key}", 5, 0.5, score, role, said_at, kind, whole)


def _header(now: float, newer: bool = False) -> str:
    day = datetime.fromtimestamp(now)
    return EVIDENCE_HEADER.format(
        today=f"{day:%A} {day.day} {day:%B %Y}",
        newer=NEWER_ABOVE if newer else "",
    )


def test_capsules_are_shown_oldest_first_whatever_the_packing_order() -> None:
    # packed best match first (the scores); shown in the order they were said
    capsules = [
        _capsule("r5", MONDAY + DAY, "assistant", score=9.0),
        _capsule("t2", MONDAY, score=5.0),
        _capsule("t5", MONDAY + DAY, score=3.0),
        _capsule("t5.1", MONDAY + DAY, "tool", score=2.0),
        _capsule("n4", MONDAY - DAY, "", "note", score=1.0),
    ]
    assert [c.id for c in chronological(capsules)] == ["n4", "t2", "t5", "r5", "t5.1"]


def test_at_the_same_moment_the_earlier_turn_comes_first() -> None:
    capsules = [
        _capsule("r12", MONDAY, "assistant"),
        _capsule("t9", MONDAY),
        _capsule("t12", MONDAY),
    ]
    assert [c.id for c in chronological(capsules)] == ["t9", "t12", "r12"]


def test_when_says_the_day_as_a_person_would() -> None:
    assert when(NOW - 3600, NOW) == "today"
    assert when(NOW - DAY, NOW) == "yesterday"
    assert when(MONDAY, NOW) == "on Monday 8 May 2023"
    assert when(0.0, NOW) == "earlier"  # a record with no time


@pytest.mark.parametrize(
    ("role", "kind", "who"),
    [
        ("user", "turn", "user"),
        ("assistant", "turn", "you"),
        ("tool", "turn", "tool"),
        ("", "note", "your note"),
        ("", "compaction", "summary"),
    ],
)
def test_each_capsule_says_who_said_it_in_a_word(role: str, kind: str, who: str) -> None:
    capsule = EvidenceCapsule("k1", "k1", "  likes green tea \n", 3, 0.5, 1.0, role, MONDAY, kind)
    block = evidence_block(RetentionReport(100, 3, [capsule]), now=NOW)
    lines = block.rstrip("\n").splitlines()
    assert lines[1:] == ["On Monday 8 May 2023:", f"- {who}: likes green tea"]


def test_evidence_block_text() -> None:
    report = RetentionReport(
        100,
        10,
        [_capsule("r2", NOW - DAY, "assistant", score=3.0), _capsule("t2", NOW - DAY, score=1.0)],
    )
    assert evidence_block(report, now=NOW) == (
        _header(NOW) + "\nYesterday:" + "\n- user: excerpt t2" + "\n- you: excerpt r2\n\n"
    )
    assert "today is Thursday 18 May 2023" in _header(NOW)
    assert evidence_block(None, now=NOW) == ""
    assert evidence_block(RetentionReport(100, 0, []), now=NOW) == ""


def test_only_the_capsules_cut_short_name_their_keys() -> None:
    report = RetentionReport(
        100,
        10,
        [
            _capsule("t2", NOW - DAY, whole=False),
            _capsule("r2", NOW - DAY, "assistant"),
            _capsule("t7", NOW - 60, whole=False),
        ],
    )
    lines = evidence_block(report, now=NOW).rstrip("\n").splitlines()
    assert lines[-1] == KEYS_LINE.format(keys="t2, t7")
    assert lines[-1] == "Cut short, in full with fetch_record: t2, t7."
    # without the tool, or with every record whole, no keys line
    assert "fetch_record" not in evidence_block(report, keys=False, now=NOW)
    whole = RetentionReport(100, 10, [_capsule("t2", NOW - DAY), _capsule("r2", NOW - DAY)])
    assert "fetch_record" not in evidence_block(whole, now=NOW)


def test_one_line_for_each_day_oldest_first() -> None:
    report = RetentionReport(
        100,
        10,
        [
            _capsule("t9", NOW - DAY, score=3.0),
            _capsule("t2", MONDAY, score=2.0),
            _capsule("r2", MONDAY, "assistant", score=1.0),
        ],
    )
    lines = evidence_block(report, keys=False, now=NOW).rstrip("\n").splitlines()
    assert lines[1:] == [
        "On Monday 8 May 2023:",
        "- user: excerpt t2",
        "- you: excerpt r2",
        "Yesterday:",
        "- user: excerpt t9",
    ]


def test_the_block_as_rendered_fits_its_budget_lowest_score_out_first() -> None:
    capsules = [_capsule(f"t{i}", MONDAY + i * DAY, score=float(10 - i)) for i in range(6)]
    report = RetentionReport(100, 60, capsules)
    whole = evidence_block(report, now=NOW, history_since=NOW)
    # the header is reserved at its longest: with it, everything fits
    fitted, text = fit_block(report, est_tokens(whole), now=NOW, history_since=NOW)
    assert fitted is not None and fitted.capsules == capsules and text == whole
    assert fitted.budget_tokens == est_tokens(whole)
    for budget in range(est_tokens(whole) - 1, 0, -7):
        fitted, text = fit_block(report, budget, now=NOW)
        assert fitted is not None and est_tokens(text) <= budget
        kept = [c.id for c in fitted.capsules]
        assert kept == [c.id for c in capsules[: len(kept)]] and len(kept) < 6  # best kept
        assert fitted.dropped == 6 - len(kept)
        assert text == evidence_block(fitted, now=NOW)
    empty, text = fit_block(report, 0, now=NOW)
    assert empty is not None and empty.capsules == [] and empty.dropped == 6 and text == ""
    assert fit_block(None, 100) == (None, "")


def test_a_capsule_that_does_not_fit_is_skipped_for_a_shorter_one() -> None:
    long = replace(_capsule("t1", MONDAY, score=9.0), excerpt="word " * 60)
    short = [_capsule(f"t{i}", MONDAY, score=float(5 - i)) for i in range(2, 5)]
    report = RetentionReport(100, 60, [long, *short])
    budget = est_tokens(evidence_block(replace(report, capsules=short), now=NOW)) + 15
    fitted, text = fit_block(report, budget, now=NOW)
    assert fitted is not None and [c.id for c in fitted.capsules] == ["t2", "t3", "t4"]
    assert est_tokens(text) <= budget


def test_packing_counts_a_day_line_once_and_keys_only_for_cut_capsules() -> None:
    # four capsules of one day cost one day line: what is left takes a fifth
    same_day = [_capsule(f"t{i}", MONDAY, score=float(9 - i)) for i in range(5)]
    report = RetentionReport(100, 60, same_day)
    text = evidence_block(report, now=NOW, history_since=NOW)
    fitted, _ = fit_block(report, est_tokens(text), now=NOW)
    assert fitted is not None and len(fitted.capsules) == 5
    # the same capsules cut short carry their keys: the keys line takes room
    cut = RetentionReport(100, 60, [replace(c, whole=False) for c in same_day])
    fitted, text = fit_block(cut, est_tokens(text), now=NOW)
    assert fitted is not None and len(fitted.capsules) < 5
    assert KEYS_LINE.format(keys=", ".join(c.id for c in fitted.capsules)) in text


def test_the_header_says_the_history_is_newer_only_when_it_is() -> None:
    old = [_capsule("t2", MONDAY), _capsule("r2", MONDAY, "assistant")]
    report = RetentionReport(100, 10, old)
    first_line = evidence_block(report, now=NOW, history_since=MONDAY + DAY).splitlines()[0]
    assert first_line == _header(NOW, newer=True)
    assert NEWER_ABOVE in first_line
    # no history in the request, or a capsule as new as the history: not said
    assert NEWER_ABOVE not in evidence_block(report, now=NOW)
    assert NEWER_ABOVE not in evidence_block(report, now=NOW, history_since=MONDAY)
    mixed = RetentionReport(100, 10, [*old, _capsule("t9", MONDAY + 2 * DAY)])
    assert NEWER_ABOVE not in evidence_block(mixed, now=NOW, history_since=MONDAY + DAY)
    # a note or a summary has no one moment: it does not count
    noted = RetentionReport(100, 10, [*old, _capsule("n1", MONDAY + 2 * DAY, "", "note")])
    assert NEWER_ABOVE in evidence_block(noted, now=NOW, history_since=MONDAY + DAY)


def test_packing_goes_by_score_and_the_block_by_time() -> None:
    candidates = [
        RetentionCandidate("t1", "an old remark", 9, 1.0, 1.0, "user", MONDAY),
        RetentionCandidate("t2", FACT, 0, 1.0, 7.5, "user", MONDAY + DAY),
    ]
    report = retain_within_budget(candidates, 1000)
    assert [c.id for c in report.capsules] == ["t2", "t1"]  # best match packed first
    block = evidence_block(report, keys=False, now=NOW)
    assert block.rstrip("\n").splitlines()[1:] == [
        "On Monday 8 May 2023:",
        "- user: an old remark",
        "On Tuesday 9 May 2023:",
        f"- user: {FACT}",
    ]


async def test_recall_shows_each_message_with_its_day_and_speaker(store: Store) -> None:
    conv = await store.conversations.create()
    store.db.clock = lambda: MONDAY
    fact_key = await _turn(store, conv.id, f"Please remember: {FACT}.", "I will remember that.")
    store.db.clock = lambda: NOW - DAY
    await _turn(store, conv.id, "Any plans for the weekend?", "Maybe a walk by the harbor.")
    store.db.clock = lambda: NOW
    engine = RecallEngine(store)
    response = await engine.recall(
        RecallRequest("What is the locker code for the amber harbor?", retained_token_budget=1024)
    )
    report = response.retained_evidence
    assert report is not None
    block = evidence_block(report, now=NOW)
    lines = block.rstrip("\n").splitlines()
    assert lines[0] == _header(NOW)
    assert lines[1] == "On Monday 8 May 2023:"
    assert lines[2] == f"- user: Please remember: {FACT}."
    assert lines[3] == "- you: I will remember that."
    yesterday = lines.index("Yesterday:")
    assert "- you: Maybe a walk by the harbor." in lines[yesterday:]
    keys = [c.retrieval_key for c in chronological(report.capsules)]
    assert keys[:2] == [fact_key, "r" + fact_key[1:]]
    assert all(c.whole for c in report.capsules) and "fetch_record" not in block


async def test_failed_turns_are_not_recalled(store: Store) -> None:
    conv = await store.conversations.create()
    failed = await store.turns.add_pending(conv.id, "the vault code for the cellar is 9090")
    await store.turns.fail(failed, "backend unreachable")
    pending = await store.turns.add_pending(conv.id, "the vault code for the attic is 1212")
    assert pending
    engine = RecallEngine(store)
    assert (await engine.recall(RecallRequest("vault code"))).memories == []
    assert await store.records.count() == 0


def test_a_capsule_goes_into_the_block_only_with_its_newer_statement() -> None:
    old = replace(_capsule("t1", MONDAY, score=9.0), newer="t9")
    other = _capsule("t2", MONDAY + DAY, score=8.0)
    newer = _capsule("t9", MONDAY + 9 * DAY, score=1.0)
    report = RetentionReport(100, 15, [old, other, newer])
    pair = replace(report, capsules=[old, newer])
    budget = est_tokens(evidence_block(pair, now=NOW, history_since=NOW))
    fitted, text = fit_block(report, budget, now=NOW)
    assert fitted is not None and [c.id for c in fitted.capsules] == ["t1", "t9"]
    assert text.index("excerpt t1") < text.index("excerpt t9")  # the newer read last
    # no room for both: never the old one alone
    fitted, text = fit_block(report, budget - 5, now=NOW)
    assert fitted is not None and "t1" not in [c.id for c in fitted.capsules]
    assert est_tokens(text) <= budget - 5
