"""newt.recall exports exactly the names the other layers use (docs/design.md section 7)."""

from __future__ import annotations

import dataclasses

import newt.recall
from newt.store.models import MemoryRecord


def test_public_names() -> None:
    assert set(newt.recall.__all__) == {
        "DEFAULT_EXCERPT_TOKENS",
        "est_tokens",
        "recoverability",
        "RetentionCandidate",
        "EvidenceCapsule",
        "RetentionReport",
        "retain_within_budget",
        "RecallRequest",
        "RecallResponse",
        "MemoryRecord",
        "RecallEngine",
    }
    for name in newt.recall.__all__:
        assert getattr(newt.recall, name) is not None
    assert newt.recall.MemoryRecord is MemoryRecord


def _fields(cls: type) -> list[tuple[str, object]]:
    return [(f.name, f.default) for f in dataclasses.fields(cls)]


def test_dataclass_fields_match_the_design() -> None:
    missing = dataclasses.MISSING
    assert _fields(newt.recall.RetentionCandidate) == [
        ("id", missing),
        ("content", missing),
        ("access_count", missing),
        ("age_hours", missing),
        ("retrieval_score", 0.0),
        ("role", ""),
        ("said_at", 0.0),
        ("kind", "turn"),
        ("newer", ""),
        ("conversation_id", ""),
    ]
    capsule = _fields(newt.recall.EvidenceCapsule)
    assert [n for n, _ in capsule[:5]] == [
        "id",
        "retrieval_key",
        "excerpt",
        "tokens",
        "recoverability",
    ]
    assert all(default is not missing for _, default in capsule[5:])  # new fields: defaults
    # who said it and when travel with the capsule (the prompt shows both)
    assert {"role", "said_at", "kind"} <= {n for n, _ in capsule}
    assert "speaker" not in {n for n, _ in capsule}
    record = {n: d for n, d in _fields(MemoryRecord)}
    assert (record["role"], record["said_at"], record["turn_id"]) == (None, 0.0, None)
    assert [n for n, _ in _fields(newt.recall.RetentionReport)] == [
        "budget_tokens",
        "retained_tokens",
        "capsules",
        "candidates_examined",
        "dropped",
    ]
    assert _fields(newt.recall.RecallRequest)[:3] == [
        ("query", missing),
        ("limit", 8),
        ("retained_token_budget", None),
    ]
    names = [n for n, _ in _fields(newt.recall.RecallResponse)]
    assert names[:2] == ["memories", "retained_evidence"]
