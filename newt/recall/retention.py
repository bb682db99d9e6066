"""Budgeted evidence retention (EMBER v0, DESIGN.md section 5).

Dumping whole recalled records into a bounded context burns the budget on
filler. Instead each record becomes an evidence capsule: a short verbatim
excerpt plus the retrieval key that fetches the full record again. Capsules
are packed greedily under the budget, most recoverable first.

The rules, each pinned by a test:
- order: recoverability desc, then retrieval_score desc, then input order;
- a capsule costs est_tokens(excerpt) + est_tokens(retrieval_key);
- packing stops at the first candidate for which fewer than key + 16 tokens remain;
- the excerpt is a verbatim substring of at most
  min(remaining - key_tokens, excerpt_tokens) * 4 characters;
- retained_tokens <= budget_tokens; candidates are never mutated;
- dropped = len(candidates) - len(capsules).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from newt.recall.excerpt import select_excerpt
from newt.recall.fts_query import query_terms

DEFAULT_EXCERPT_TOKENS = 64

# Recency half-life of the recoverability score: one week.
HALF_LIFE_HOURS = 168.0
# Packing stops when less than key_tokens + this remains: a capsule with a
# handful of excerpt tokens is a key with no evidence worth its cost.
MIN_EXCERPT_TOKENS = 16
CHARS_PER_TOKEN = 4


def est_tokens(text: str) -> int:
    """ceil(len(text) / 4): the rough cut used everywhere in recall (no tokenizer)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def recoverability(age_hours: float, access_count: int) -> float:
    """Recency x retrieval-hit-rate: 0.5 ** (age / 168) * (hits + 1) / (hits + 6).

    A record from the future counts as new; negative hit counts as none (the
    formula would divide by zero at -6); an unknown (NaN) age as infinitely old.
    """
    if math.isnan(age_hours):
        return 0.0
    hits = max(access_count, 0)
    return 0.5 ** (max(age_hours, 0.0) / HALF_LIFE_HOURS) * (hits + 1) / (hits + 6)


@dataclass
class RetentionCandidate:
    """One recalled record offered for retention; `id` is its retrieval key (e.g. "t42")."""

    id: str
    content: str
    access_count: int
    age_hours: float
    retrieval_score: float = 0.0


@dataclass
class EvidenceCapsule:
    """A verbatim excerpt plus the key that recovers the full record.

    `retrieval_score` (beyond DESIGN.md) is the candidate's: how well its
    record matched the question, which orders capsules for the prompt
    (see presentation.py) while recoverability decides what is packed.
    """

    id: str
    retrieval_key: str
    excerpt: str
    tokens: int
    recoverability: float
    retrieval_score: float = 0.0
    # For a turn's record ("User: ...\nAssistant: ..."): who was speaking where
    # the excerpt starts ("user" / "assistant"), so the prompt can say who said
    # it even when the excerpt begins mid-message; "" for other records.
    speaker: str = ""


@dataclass
class RetentionReport:
    budget_tokens: int
    retained_tokens: int
    capsules: list[EvidenceCapsule] = field(default_factory=list)
    candidates_examined: int = 0
    dropped: int = 0


USER_MARK = "User: "
REPLY_MARK = "\nAssistant: "


def speaker_at(content: str, excerpt: str) -> str:
    """Who speaks where `excerpt` starts in a turn record's `content`."""
    if not content.startswith(USER_MARK) or REPLY_MARK not in content:
        return ""
    start = content.find(excerpt)
    if start < 0:
        return ""
    return "user" if start < content.index(REPLY_MARK) + 1 else "assistant"


def _score(value: float) -> float:
    # A NaN would make the sort order depend on where it sits; rank it last.
    return -math.inf if math.isnan(value) else value


def retain_within_budget(
    candidates: Sequence[RetentionCandidate],
    budget_tokens: int,
    excerpt_tokens: int = DEFAULT_EXCERPT_TOKENS,
    query: str | None = None,
) -> RetentionReport:
    """Pack the most recoverable evidence into `budget_tokens` as capsules.

    With `query`, each excerpt is the stretch of its record that best matches
    the query; without, the record's head. A negative budget is treated as 0
    (and reported as 0, so retained_tokens <= budget_tokens still holds).
    """
    budget = max(budget_tokens, 0)
    excerpt_cap = max(excerpt_tokens, 0)
    terms = frozenset(query_terms(query)) if query else frozenset()
    scored = [(recoverability(c.age_hours, c.access_count), c) for c in candidates]
    # sorted() is stable, so equal keys keep input order: the last tie-break.
    order = sorted(scored, key=lambda rc: (-rc[0], -_score(rc[1].retrieval_score)))

    remaining = budget
    capsules: list[EvidenceCapsule] = []
    for rec, candidate in order:
        key = candidate.id
        key_tokens = est_tokens(key)
        if remaining < key_tokens + MIN_EXCERPT_TOKENS:
            break
        max_chars = min(remaining - key_tokens, excerpt_cap) * CHARS_PER_TOKEN
        excerpt = select_excerpt(candidate.content, max_chars, terms)
        tokens = est_tokens(excerpt) + key_tokens
        remaining -= tokens
        capsules.append(
            EvidenceCapsule(
                key,
                key,
                excerpt,
                tokens,
                rec,
                _score(candidate.retrieval_score),
                speaker_at(candidate.content, excerpt),
            )
        )

    return RetentionReport(
        budget_tokens=budget,
        retained_tokens=budget - remaining,
        capsules=capsules,
        candidates_examined=len(candidates),
        dropped=len(candidates) - len(capsules),
    )
