"""Leave out near misses: records that match only part of what a better one matches.

Asked "What is the locker code for the amber harbor?", recall finds the turn
that told it and also "The locker code for the cedar harbor is 9941": every
word but `amber`. Shown both, a small model names the wrong code about as
often as the right one. Replaying the dev set's question requests (SmolLM2-135M,
3 seeds) where the asked-for capsule came first among two or three: 5 of 51
replies named the fact with the near misses shown, 31 of 51 with the best
capsule alone; with one capsule, nothing changed (16 of 27 either way).

So a record is left out when the query words it holds are a strict subset of
those held by another recalled record: it answers a narrower question than
that one and only competes with it. Rank does not protect it: bm25 favours
short records, and a fact takes the rank of its best echo (dedupe.py), so
asked for the cedar harbor, the amber harbor's short note ranked above the
cedar harbor's longer turn. A record holding a word the others lack is kept
(it may be the other half of an answer), records holding the same words are
kept (two statements of one thing, or an update), and a record found by
meaning alone (no query word) is kept: there is nothing to compare.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from newt.recall.dedupe import holds
from newt.recall.tokens import stem
from newt.store.models import MemoryRecord


def words_held(content: str, terms: Collection[str]) -> frozenset[str]:
    """The query words `content` holds (lowercased; see dedupe.holds), also in
    another form with the same stem: the index found the record through it
    (`news` for `new`), so it holds that word as far as recall is concerned."""
    lowered = content.lower()
    wanted = {t.lower() for t in terms}
    held = {t for t in wanted if holds(lowered, t)}
    for term in wanted - held:
        if _holds_stem(lowered, term):
            held.add(term)
    return frozenset(held)


def _holds_stem(lowered: str, term: str) -> bool:
    """A word of `lowered` stems as `term` does. Only words sharing the stem's
    first letters are stemmed (porter keeps a word's head), so a long record
    costs a regex scan, not a tokenizer call per word."""
    target = stem(term)
    if not target:
        return False
    head = re.escape(target[: min(len(target), 3)])
    candidates = {m.group() for m in re.finditer(r"\b" + head + r"\w*", lowered)}
    return any(stem(word) == target for word in candidates)


def drop_near_misses(
    ranked: Sequence[MemoryRecord], terms: Collection[str]
) -> tuple[list[MemoryRecord], list[str]]:
    """`ranked` (best first, order kept) without near misses, and the keys left out."""
    held = [words_held(record.content, terms) for record in ranked]
    kept: list[MemoryRecord] = []
    left_out: list[str] = []
    for record, words in zip(ranked, held, strict=True):
        if words and any(words < other for other in held):
            left_out.append(record.key)
        else:
            kept.append(record)
    return kept, left_out
