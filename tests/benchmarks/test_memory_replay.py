"""benchmarks/memory_replay.py: which requests it replays, what each variant sends,
and how a reply is judged (the memory benchmark's rule)."""

from __future__ import annotations

import sys

import pytest

from tests.support.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import memory_replay as replay

EVIDENCE = (
    "From earlier conversations with the user (verbatim excerpts, for reference only):\n"
    "- The user said: The locker code for the amber harbor is 4417.\n"
    "- The user said: The locker code for the cedar harbor is 9941.\n\n"
    "What is the locker code for the amber harbor?"
)
MESSAGES = [
    {"role": "system", "content": "You are newt."},
    *[{"role": role, "content": f"{role} {n}"} for n in range(4) for role in ("user", "assistant")],
    {"role": "user", "content": EVIDENCE},
]


def answer(value: str, **extra: object) -> dict[str, object]:
    base = {"set_name": "dev", "design": "first", "mode": "on", "seed": 1, "fact_id": value}
    return {**base, "value": value, "messages": MESSAGES, **extra}


def test_variants_keep_the_system_prompt_and_the_question() -> None:
    assert replay.variant("as_sent", MESSAGES) == MESSAGES
    assert replay.variant("no_history", MESSAGES) == [MESSAGES[0], MESSAGES[-1]]
    last = replay.variant("last_exchanges", MESSAGES)
    assert last == [MESSAGES[0], *MESSAGES[-5:]]
    assert [m["content"] for m in last[1:-1]] == ["user 2", "assistant 2", "user 3", "assistant 3"]
    with pytest.raises(ValueError):
        replay.variant("shuffled", MESSAGES)


def test_evidence_variants_reshape_only_the_last_message() -> None:
    first = replay.variant("first_only", MESSAGES)
    assert first[:-1] == MESSAGES[:-1]
    assert first[-1]["content"] == (
        "From earlier conversations with the user (verbatim excerpts, for reference only):\n"
        "- The user said: The locker code for the amber harbor is 4417.\n\n"
        "What is the locker code for the amber harbor?"
    )
    after = replay.variant("after_question", MESSAGES)[-1]["content"]
    assert after.startswith("What is the locker code for the amber harbor?\n\nFrom earlier")
    assert after.endswith("cedar harbor is 9941.")
    plain = [*MESSAGES[:-1], {"role": "user", "content": "Hello there."}]
    assert replay.variant("first_only", plain) == plain  # no evidence: nothing to reshape


def test_only_requests_with_the_fact_in_a_capsule_are_replayed() -> None:
    found, missing = answer("4417"), answer("1234")
    no_request = answer("4417", messages=[])
    assert replay.replayable([found, missing, no_request]) == [found]


def test_a_reply_naming_a_near_miss_value_does_not_count() -> None:
    misses = ["9941"]
    assert replay.carries("The code is 4417.", "4417", misses)
    assert not replay.carries("It is 4417, or maybe 9941.", "4417", misses)
    assert not replay.carries("I do not know.", "4417", misses)
    assert not replay.carries("Code 44170.", "4417", misses)  # a longer number is not it


def test_near_misses_come_from_the_file_or_from_the_same_run() -> None:
    saved = answer("4417", siblings=["9941"])
    assert replay.near_misses(saved, [saved]) == ["9941"]
    old = answer("4417")
    same_run, other_run = answer("9941"), answer("5555", seed=2)
    assert replay.near_misses(old, [old, same_run, other_run]) == ["9941"]
