"""One capsule per fact: drop recalled records that only repeat an earlier one.

The same fact comes back from several records: the turn that told it, the
compaction record that summarized that turn, and later replies that repeated
the evidence they were shown ("The locker code for the amber harbor is
4417."). Each copy would take a recall slot and a capsule, and a later reply
that repeats the question's words ranks above the fact it repeats. So the
recalled records are read oldest first, and a record is a repeat when every
statement in it that matches the query is covered by the records before it:
its distinctive words (lowercased, less stop words and the
`User:`/`Assistant:` labels) all occur in one of them. Questions are not statements: a turn that
asks about the fact and gets it (or nothing new) back is a repeat too.

A repeat is dropped and the record it repeats takes its place in the ranking
when that is better, so the original fact is never outranked by its echo.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace

from newt.recall.fts_query import STOP_WORDS
from newt.store.models import MemoryRecord

# Role labels of rendered turns and compaction records: not part of a fact.
_IGNORED = STOP_WORDS | {"user", "assistant"}
# A sentence ends after terminal punctuation (and closing quotes) or at a newline.
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+|\n+")
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Duplicate:
    """`key` repeats `original` (an older record)."""

    key: str
    original: str


def _norm(words: Iterable[str]) -> set[str]:
    """Distinctive words (lowercased; no stop words, no role labels), a
    plural `s` dropped so that `codes` is found in a record saying `code`."""
    return {w[:-1] if len(w) > 3 and w[-1] == "s" else w for w in set(words)} - _IGNORED


def _statements(lowered: str, terms: re.Pattern[str] | None) -> list[set[str]]:
    """The words of each statement (not a question) of a lowercased record that
    holds a query word; without any (a record found by meaning, not by its
    words), of every statement."""
    said = [s for s in _SENTENCE_END.split(lowered) if not s.rstrip().endswith("?")]
    if terms is not None:
        hit = [_norm(_WORD.findall(s)) for s in said if terms.search(s)]
        hit = [w for w in hit if w]
        if hit:
            return hit
    return [w for w in (_norm(_WORD.findall(s)) for s in said) if w]


def _pattern(terms: Collection[str]) -> re.Pattern[str] | None:
    """Any query word at a word start (`code` also finds `codes`)."""
    words = sorted({t.lower() for t in terms} - _IGNORED, key=len, reverse=True)
    if not words:
        return None
    return re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + ")")


def statements(content: str, terms: Collection[str]) -> list[set[str]]:
    """The distinctive words of each statement of `content` that holds a query word."""
    return _statements(content.lower(), _pattern(terms))


def drop_repeats(
    ranked: Sequence[MemoryRecord], terms: Collection[str]
) -> tuple[list[MemoryRecord], list[Duplicate]]:
    """`ranked` (best first) without records that repeat an older one in it.

    `terms` are query words (see fts_query.query_terms). The kept original
    moves up to its best repeat's rank and takes the better score; the
    result stays best first. This runs on every recall over the whole of
    each candidate, so it is plain string work: words are compared
    lowercased, and a word is in a record if the record contains it (a
    substring test, so `code` is in a record saying `codes`).
    """
    pattern = _pattern(terms)
    lowered = {r.key: r.content.lower() for r in ranked}
    position = {r.key: i for i, r in enumerate(ranked)}
    best = {r.key: (i, r.score) for i, r in enumerate(ranked)}
    oldest_first = sorted(ranked, key=lambda r: (r.created_at, r.id))
    kept: list[MemoryRecord] = []
    duplicates: list[Duplicate] = []
    for record in oldest_first:
        said = _statements(lowered[record.key], pattern) if kept else []
        original = _covering(said, kept, lowered) if said else None
        if original is None:
            kept.append(record)
            continue
        duplicates.append(Duplicate(record.key, original.key))
        rank, score = best[original.key]
        mine = position[record.key]
        best[original.key] = (min(rank, mine), max(score, record.score))
    kept.sort(key=lambda r: best[r.key][0])
    return [replace(r, score=best[r.key][1]) for r in kept], duplicates


def _covering(
    said: list[set[str]], older: list[MemoryRecord], lowered: dict[str, str]
) -> MemoryRecord | None:
    """The oldest older record holding every statement's words."""
    need = set().union(*said)
    for record in older:
        text = lowered[record.key]
        if all(holds(text, word) for word in need):
            return record
    return None


def holds(text: str, word: str) -> bool:
    if len(word) > 3:
        return word in text
    # A short word (a number, an initial) must stand alone: `4` is not in `4417`.
    return re.search(r"\b" + re.escape(word) + r"\b", text) is not None
