"""How retained evidence is shown to the model: which capsule comes first.

`retain_within_budget` decides WHAT fits (most recoverable first, DESIGN.md
section 5); this module decides the ORDER the model reads it in. A small
model leans on what it reads first (in issue 10's runs SmolLM2-135M answered
6 of 6 with the asked-for capsule first, 1 of 6 with it fourth), so capsules
are ordered by how well their record matched the question (retrieval score:
-bm25, or the fused rank score with embeddings), not by recoverability.

The block sits right before the user's message, so two orders are worth
measuring (benchmarks/memory_answers.py): the best match first (read first)
or last (closest to the question). `packed` keeps the packing order, the
behaviour before relevance ordering, as a baseline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

from newt.recall.retention import EvidenceCapsule, RetentionReport

EvidenceOrder = Literal["best_first", "best_last", "packed"]
EVIDENCE_ORDERS: tuple[str, ...] = get_args(EvidenceOrder)
DEFAULT_EVIDENCE_ORDER: EvidenceOrder = "best_first"

EVIDENCE_HEADER = (
    "Retained evidence from memory (verbatim excerpts, reference only; "
    "fetch_record(key) returns a record in full):"
)


def by_relevance(capsules: Sequence[EvidenceCapsule]) -> list[EvidenceCapsule]:
    """Best-matching first; equal scores keep their packing order."""
    return sorted(capsules, key=lambda c: -c.retrieval_score)


def ordered(
    capsules: Sequence[EvidenceCapsule], order: EvidenceOrder = DEFAULT_EVIDENCE_ORDER
) -> list[EvidenceCapsule]:
    """The capsules in the order the prompt shows them."""
    if order == "packed":
        return list(capsules)
    best = by_relevance(capsules)
    if order == "best_last":
        return best[::-1]
    if order == "best_first":
        return best
    raise ValueError(f"unknown evidence order {order!r}; use one of {', '.join(EVIDENCE_ORDERS)}")


def evidence_block(
    report: RetentionReport | None, order: EvidenceOrder = DEFAULT_EVIDENCE_ORDER
) -> str:
    """The capsules as text placed before the user's message in this request only."""
    if report is None or not report.capsules:
        return ""
    lines = [EVIDENCE_HEADER]
    lines += [f"- [{c.retrieval_key}] {c.excerpt}" for c in ordered(report.capsules, order)]
    return "\n".join(lines) + "\n\n"
