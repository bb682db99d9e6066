"""Evidence capsules: recalled records packed under a token budget, best match first.

Dumping whole recalled records into a bounded context burns the budget on
filler, and a record cut short loses the fact. Each record becomes a capsule:
the record whole when it is short (most messages are), else the stretch of it
that best matches the query, plus the retrieval key that fetches it whole.
Capsules are packed in the order the recall ranked them (how well they match
the question), so the budget goes to the records most likely to answer it.
This is the capsule-level packer for callers with their own rendering; the
request's block is packed as rendered by presentation.pack_block.

The rules, each pinned by a test:
- order: retrieval_score desc, then recoverability desc (so candidates
  without scores go by recency x hit rate, mnemo's `retained` order), then
  input order;
- a capsule costs est_tokens(excerpt) + est_tokens(retrieval_key) + line_tokens;
- a record of at most `excerpt_tokens` goes whole; a longer one is cut to a
  verbatim excerpt of at most excerpt_tokens * 4 characters around the query;
- a capsule that does not fit what remains is skipped (a shorter one after it
  may fit); packing stops when less than key + MIN_EXCERPT_TOKENS remains;
- a candidate whose `newer` statement is offered too goes only with it (and
  with that one's newer one, and so on): all packed, or, when they do not
  all fit, none;
- retained_tokens <= budget_tokens; candidates are never mutated;
- dropped = len(candidates) - len(capsules).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from newt.recall.excerpt import select_excerpt
from newt.recall.fts_query import query_terms

T = TypeVar("T")

# A record up to this many tokens goes whole; a longer one is excerpted.
DEFAULT_EXCERPT_TOKENS = 120

# Recency half-life of the recoverability score (shown in the sidebar): one week.
HALF_LIFE_HOURS = 168.0
# Packing stops when less than key_tokens + this remains: a capsule with a
# handful of excerpt tokens is a key with no evidence worth its cost.
MIN_EXCERPT_TOKENS = 16
CHARS_PER_TOKEN = 4


def chain(first: T, newer_of: Callable[[T], T | None], placed: Callable[[T], bool]) -> list[T]:
    """`first` and its newer statement, and that one's, and so on, up to one
    already `placed` (or a repeat): what goes together or not at all."""
    group = [first]
    newer = newer_of(first)
    while newer is not None and not placed(newer) and newer not in group:
        group.append(newer)
        newer = newer_of(newer)
    return group


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
    role: str = ""
    """Who said it: "user", "assistant", "tool"; "" for a note or a summary."""
    said_at: float = 0.0
    kind: str = "turn"
    """The record's kind: "turn", "note" or "compaction"."""
    newer: str = ""
    """The key of a later record about the same thing: it goes wherever this one goes."""
    conversation_id: str = ""
    """The conversation it was said in ("" for a note)."""


@dataclass
class EvidenceCapsule:
    """A verbatim excerpt plus the key that recovers the full record, and who
    said it when (the prompt shows both, so the newest statement can be read
    as the newest)."""

    id: str
    retrieval_key: str
    excerpt: str
    tokens: int
    recoverability: float
    retrieval_score: float = 0.0
    role: str = ""
    said_at: float = 0.0
    kind: str = "turn"
    whole: bool = True
    """The excerpt is the whole record (False: cut; fetch_record has the rest)."""
    newer: str = ""
    """The key of a later record about the same thing: it goes wherever this one goes."""
    conversation_id: str = ""
    """The conversation it was said in ("" for a note)."""


@dataclass
class RetentionReport:
    budget_tokens: int
    retained_tokens: int
    capsules: list[EvidenceCapsule] = field(default_factory=list)
    candidates_examined: int = 0
    dropped: int = 0


def _score(value: float) -> float:
    # A NaN would make the sort order depend on where it sits; rank it last.
    return -math.inf if math.isnan(value) else value


def to_capsule(
    candidate: RetentionCandidate, excerpt_tokens: int, terms: frozenset[str]
) -> EvidenceCapsule | None:
    """The candidate's capsule: whole when it fits `excerpt_tokens`, else its
    stretch that best matches `terms`; None when nothing is left to show.
    `tokens` counts the excerpt alone (each packer adds what its line costs)."""
    cap = max(excerpt_tokens, 0) * CHARS_PER_TOKEN
    excerpt = select_excerpt(candidate.content, cap, terms)
    if not excerpt.strip():
        return None
    return EvidenceCapsule(
        candidate.id,
        candidate.id,
        excerpt,
        est_tokens(excerpt),
        recoverability(candidate.age_hours, candidate.access_count),
        _score(candidate.retrieval_score),
        candidate.role,
        candidate.said_at,
        candidate.kind,
        excerpt == candidate.content,
        candidate.newer,
        candidate.conversation_id,
    )


def retain_within_budget(
    candidates: Sequence[RetentionCandidate],
    budget_tokens: int,
    excerpt_tokens: int = DEFAULT_EXCERPT_TOKENS,
    query: str | None = None,
    line_tokens: int = 0,
) -> RetentionReport:
    """Pack the best-matching evidence into `budget_tokens` as capsules.

    With `query`, a long record's excerpt is its stretch that best matches the
    query; without, its head. A negative budget is treated as 0 (and reported
    as 0, so retained_tokens <= budget_tokens still holds).
    """
    budget = max(budget_tokens, 0)
    excerpt_cap = max(excerpt_tokens, 0)
    terms = frozenset(query_terms(query)) if query else frozenset()
    # Best match first; recoverability (recency x hit rate) breaks ties, so
    # candidates without retrieval scores go by it alone. sorted() is stable,
    # so input order is the last tie-break.
    order = sorted(
        candidates,
        key=lambda c: (-_score(c.retrieval_score), -recoverability(c.age_hours, c.access_count)),
    )

    offered = {c.id: c for c in order}

    def capsule(candidate: RetentionCandidate) -> EvidenceCapsule | None:
        made = to_capsule(candidate, excerpt_cap, terms)
        if made is not None:
            made.tokens += est_tokens(candidate.id) + max(line_tokens, 0)
        return made

    remaining = budget
    capsules: list[EvidenceCapsule] = []
    taken: set[str] = set()
    for candidate in order:
        if candidate.id in taken:
            continue
        key_tokens = est_tokens(candidate.id) + max(line_tokens, 0)
        if remaining < key_tokens + MIN_EXCERPT_TOKENS:
            break
        group = chain(candidate, lambda c: offered.get(c.newer), lambda c: c.id in taken)
        made = [capsule(c) for c in group]
        if made[0] is None:
            continue
        kept = [c for c in made if c is not None]
        tokens = sum(c.tokens for c in kept)
        if tokens > remaining:
            continue
        remaining -= tokens
        capsules += kept
        taken.update(c.retrieval_key for c in kept)

    return RetentionReport(
        budget_tokens=budget,
        retained_tokens=budget - remaining,
        capsules=capsules,
        candidates_examined=len(candidates),
        dropped=len(candidates) - len(capsules),
    )
