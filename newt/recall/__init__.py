"""Recall and retained evidence: words and meaning over every memory record,
and compact verbatim evidence capsules packed under a token budget.

docs/design.md section 7 describes it. Nothing here imports textual.
"""

from newt.recall.engine import RecallEngine, RecallRequest, RecallResponse
from newt.recall.retention import (
    DEFAULT_EXCERPT_TOKENS,
    EvidenceCapsule,
    RetentionCandidate,
    RetentionReport,
    est_tokens,
    recoverability,
    retain_within_budget,
)
from newt.store.models import MemoryRecord

__all__ = [
    "DEFAULT_EXCERPT_TOKENS",
    "EvidenceCapsule",
    "MemoryRecord",
    "RecallEngine",
    "RecallRequest",
    "RecallResponse",
    "RetentionCandidate",
    "RetentionReport",
    "est_tokens",
    "recoverability",
    "retain_within_budget",
]
