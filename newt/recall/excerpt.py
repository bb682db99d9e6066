"""Choose the verbatim excerpt a capsule keeps of its record.

Without a query the excerpt is the record's head. With one,
it is the stretch that best matches the query: a record is mostly filler
around the fact that made it a hit, and the head rarely holds that fact.

Every excerpt is `content[a:b]` for some a <= b with b - a <= max_chars, so
it is verbatim by construction and never exceeds the cap.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection
from dataclasses import dataclass

from newt.recall.fts_query import query_terms
from newt.recall.tokens import WORD, stem_list, stems

# Where a new sentence (or line) begins: after terminal punctuation, optionally
# closing quotes/brackets, and whitespace; or after a newline.
_SENTENCE_BREAK = re.compile(r"[.!?…][\"'”’)\]]*\s+|\n\s*")
_SPACE = re.compile(r"\s")

# When the sentence around a match is too long to start the window at its
# beginning, keep this share of the window as context before the match.
_LEAD_SHARE = 4


@dataclass(frozen=True)
class _Hit:
    start: int
    end: int
    term: str
    sentence_start: int  # of the sentence holding the hit
    sentence_end: int  # after its terminal punctuation


def select_excerpt(content: str, max_chars: int, terms: Collection[str] = ()) -> str:
    """A verbatim substring of `content` of at most `max_chars` characters,
    centered on `terms` (folded words, see fts_query.query_terms) if given."""
    if max_chars <= 0:
        return ""
    if len(content) <= max_chars:
        return content
    hits = _find_hits(content, terms) if terms else []
    if not hits:
        return content[:max_chars]
    start = _best_start(content, hits, max_chars)
    if start is None:  # no matched word fits in the cap
        return content[:max_chars]
    end = _trim_end(content, hits, start, max_chars)
    return content[start:end]


def focus_terms(text: str, rare: Collection[str]) -> list[str]:
    """The search words of those sentences of `text` that hold a rare word.

    In a long message most words are context; the sentence naming the rare
    word (an entity, a code) is usually the question, and its other words
    say which mention of that word in a record is the one asked about.
    """
    starts, ends = sentences(text)
    wanted = set(stems(rare).values())
    focused = [
        text[start:end]
        for start, end in zip(starts, ends, strict=True)
        if wanted.intersection(stems(query_terms(text[start:end])).values())
    ]
    return query_terms(" ".join(focused)) if focused else list(rare)


def _find_hits(content: str, terms: Collection[str]) -> list[_Hit]:
    # Compared by stem, as the index matches: `codes` in the query finds `code`.
    wanted = set(stems(terms).values())
    matches = list(WORD.finditer(content))
    stemmed = stem_list([m.group() for m in matches])
    found = [
        (match.start(), match.end(), term)
        for match, term in zip(matches, stemmed, strict=True)
        if term in wanted
    ]
    if not found:
        return []
    starts, ends = sentences(content)
    hits = []
    for start, end, term in found:
        i = bisect.bisect_right(starts, start) - 1
        hits.append(_Hit(start, end, term, starts[i], ends[i]))
    return hits


def sentences(content: str) -> tuple[list[int], list[int]]:
    """Start and end offsets of each sentence (or line)."""
    starts, ends = [0], []
    for match in _SENTENCE_BREAK.finditer(content):
        # The sentence keeps its terminal punctuation and closing quotes.
        ends.append(match.start() + len(match.group().rstrip()))
        starts.append(match.end())
    ends.append(len(content))
    return starts, ends


def _best_start(content: str, hits: list[_Hit], max_chars: int) -> int | None:
    """Start of the window that covers the most distinct query terms.

    Each hit proposes one window, starting where its sentence starts so the
    excerpt reads as whole sentences (facts are usually stated in one). A
    term that recurs throughout the record says less about where the answer
    is than one that appears once, so rarer terms weigh more; a term whose
    sentence the window cuts short counts half, since what completes the
    statement (often the answer) would be cut with it.
    """
    counts: dict[str, int] = {}
    for hit in hits:
        counts[hit.term] = counts.get(hit.term, 0) + 1
    weight = {term: 1.0 + 1.0 / n for term, n in counts.items()}
    hit_starts = [h.start for h in hits]

    # Ties on coverage go to the window whose matches sit closest together
    # (they are more likely one statement of the fact), then the earliest.
    best: tuple[float, int, int, int] | None = None
    for anchor in hits:
        start = _window_start(content, anchor, max_chars)
        end = start + max_chars
        credit: dict[str, float] = {}
        inside = []
        for hit in hits[bisect.bisect_left(hit_starts, start) :]:
            if hit.end > end:  # words never overlap: ends ascend with starts
                break
            whole = hit.sentence_end <= end or hit.sentence_end - hit.sentence_start > max_chars
            share = 1.0 if whole else 0.5
            credit[hit.term] = max(credit.get(hit.term, 0.0), share * weight[hit.term])
            inside.append(hit)
        if not inside:
            continue
        cover, cover_start = _tightest_cover(inside)
        # Less lead-in before the matches leaves more room after them, where
        # the answer usually sits.
        key = (sum(credit.values()), -cover, start - cover_start, -start)
        if best is None or key > best:
            best = key
    if best is None:
        return None
    return -best[3]


def _tightest_cover(hits: list[_Hit]) -> tuple[int, int]:
    """(length, start) of the shortest run of `hits` that holds all their terms."""
    need = len({h.term for h in hits})
    seen: dict[str, int] = {}
    best = (hits[-1].end - hits[0].start, hits[0].start)
    left = 0
    for hit in hits:
        seen[hit.term] = seen.get(hit.term, 0) + 1
        while len(seen) == need:
            best = min(best, (hit.end - hits[left].start, hits[left].start))
            gone = hits[left].term
            seen[gone] -= 1
            if not seen[gone]:
                del seen[gone]
            left += 1
    return best


def _window_start(content: str, anchor: _Hit, max_chars: int) -> int:
    sentence = anchor.sentence_start
    if anchor.end - sentence <= max_chars:
        return sentence
    # The sentence is too long: start a little before the anchor, on a word
    # boundary, so the words leading into the match come along.
    start = max(sentence, anchor.start - max_chars // _LEAD_SHARE)
    space = _SPACE.search(content, start, anchor.start)
    return space.end() if space and start > sentence else start


def _trim_end(content: str, hits: list[_Hit], start: int, max_chars: int) -> int:
    """End the window on a sentence (else word) boundary after the last matched term."""
    end = min(len(content), start + max_chars)
    if end == len(content):
        return end
    last_hit_end = max((h.end for h in hits if h.start >= start and h.end <= end), default=start)
    # The last boundary in the window keeps as much of what follows the match
    # (where an answer usually sits) as fits; a cut mid-word would be noise.
    cut = None
    for match in _SENTENCE_BREAK.finditer(content, last_hit_end):
        if match.start() >= end:
            break
        # Keep the terminal punctuation and closing quotes, not the space.
        sentence_end = match.start() + len(match.group().rstrip())
        if sentence_end <= end:
            cut = sentence_end
    if cut is not None and cut >= last_hit_end:
        return cut
    space = content.rfind(" ", last_hit_end, end)
    return space if space > last_hit_end else end
