"""Forgetting only what holds the words: a message's sentences (and clauses) that
hold a phrase, the rest of the message kept with each cut marked.

"My sister lives in Tromsø, I'm allergic to peanuts, my dog is called Pixel"
forgotten by "peanuts" keeps "My sister lives in Tromsø, [forgotten], my dog
is called Pixel". A message is cut into parts at sentence ends, line breaks,
commas and semicolons; the parts holding the phrase (its words in a row, case
aside) go. When no single part holds it (the phrase runs across a comma) or
every part does, the whole message goes, as forgetting it by key does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from newt.store.forget import FORGOTTEN

_BREAK = re.compile(r"(?<=[.!?…])\s+|\n+|[,;]\s+")


@dataclass(frozen=True)
class Cut:
    """What forgetting only the parts holding a phrase leaves of one text."""

    kept: str
    """The text with each run of forgotten parts replaced by FORGOTTEN."""
    parts: list[str]
    """The parts that go, verbatim."""


def parts_of(text: str) -> list[tuple[int, int]]:
    """(start, end) of each part of `text`, separators left out."""
    spans, start = [], 0
    for m in _BREAK.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def holds(text: str, query: str) -> bool:
    """Whether `text` holds the query's words in a row (case aside)."""
    words = re.findall(r"\w+", query.lower())
    return bool(words) and re.search(r"\W+".join(map(re.escape, words)), text.lower()) is not None


def cut(text: str, query: str) -> Cut | None:
    """What is left of `text` without the parts holding `query`; None when the
    whole of it would go anyway (no part alone holds it, or every part does)."""
    spans = parts_of(text)
    going = [(a, b) for a, b in spans if holds(text[a:b], query)]
    if not going or len(going) == len(spans):
        return None
    kept, pos = [], 0
    for i, (a, b) in enumerate(going):
        gap = text[pos:a]
        if i == 0 or not _only_separators(gap):
            kept += [gap, FORGOTTEN]
        # else the part right after a forgotten one: one marker covers both
        pos = b
    kept.append(text[pos:])
    return Cut("".join(kept), [text[a:b] for a, b in going])


def _only_separators(text: str) -> bool:
    return not text.strip(" \t\n,;.!?…")


def holds_more(text: str, query: str) -> bool:
    """The text says something besides the parts holding `query`: forgetting
    it whole takes that too."""
    spans = parts_of(text)
    return sum(holds(text[a:b], query) for a, b in spans) < len(spans)
