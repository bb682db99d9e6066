"""The floor: recall carries a record only when it is related to the message
(docs/design.md section 7).

Two measures, each on a scale that means the same for every message:
- meaning: the cosine between the message and the record's best piece
  (all-MiniLM-L6-v2 vectors are normalised; unrelated sentences sit near 0.1-0.3);
- words: the record's coverage, the share of the message's word weight it
  holds, each word weighted by its inverse document frequency in the store (a
  word memory never saw weighs most, a speaker's name on every line least).

The message first: it is about something memory holds only when its best
record reaches `gate_cosine` or `gate_coverage`; otherwise nothing is carried
(a haiku request after a conversation about pets). Then each record: carried
only when it reaches `record_cosine` or `record_coverage`, so a record that
shares neither meaning nor a telling word with the message does not ride
along. Records brought as context around a hit (its neighbours, its newer
statement) follow their hit. Why both levels: a related message's answer is
often worded apart from it (a low single score), while an unrelated message's
best match is still a weak one; the values were calibrated on the LoCoMo
development conversations and a probe set of unrelated requests
(docs/benchmarks.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from newt.recall.tokens import WORD, stem_list
from newt.recall.tuning import RecallTuning
from newt.store.models import MemoryRecord


def word_weights(records: int, doc_freqs: Sequence[tuple[str, int]]) -> dict[str, float]:
    """Each word's weight: bm25's inverse document frequency in a store of
    `records` records, a word held by none weighing as one held by one (in a
    young store, a word nobody said yet tells little more than a rare one)."""
    n = max(records, 1)
    weights = {}
    for word, df in doc_freqs:
        held = min(max(df, 1), n)
        weights[word] = math.log(1.0 + (n - held + 0.5) / (held + 0.5))
    return weights


def coverage(
    content: str, weights: dict[str, float], stems: dict[str, frozenset[str]] | None = None
) -> float:
    """The share of the message's word weight that `content` holds (0..1),
    words compared as the index compares them (folded and stemmed: "coding"
    holds "code", "Crème" holds "creme"). `stems`: `term_stems(weights)`,
    when many records are measured against one message."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    stems = stems if stems is not None else term_stems(weights)
    held = set(stem_list(WORD.findall(content)))
    return sum(w for term, w in weights.items() if stems[term] <= held) / total


def term_stems(weights: dict[str, float]) -> dict[str, frozenset[str]]:
    """Each word's index token(s): a word the tokenizer splits is a phrase,
    every part of which must be held."""
    return {t: frozenset(s.split()) for t, s in zip(weights, stem_list(list(weights)), strict=True)}


def related(
    records: Sequence[MemoryRecord],
    cosines: dict[int, float],
    weights: dict[str, float],
    tuning: RecallTuning,
    *,
    own: bool = False,
) -> list[MemoryRecord]:
    """Those of `records` (best first) related to the message, in order; none
    when the message is related to nothing memory holds. `cosines`: the
    meaning path's cosine by record id (absent: not among the nearest, or no
    meaning path); `weights`: `word_weights` of the message's words.

    `own`: the message is about the user (own_words.about_the_user). With
    meaning at hand, a record then needs `record_cosine`, or as much of the
    message's words as the gate asks: the user's line that answers is near
    in meaning, and in one person's chat an everyday word of the message
    ("want", "learn", "good") weighs enough to bring lines about other
    things. By words alone, a word is all there is to go on."""
    stems = term_stems(weights)
    cover = {r.id: coverage(r.content, weights, stems) for r in records}
    best_cosine = max((cosines.get(r.id, -1.0) for r in records), default=-1.0)
    best_cover = max(cover.values(), default=0.0)
    if best_cosine < tuning.gate_cosine and best_cover < tuning.gate_coverage:
        return []
    floor = tuning.record_coverage
    if own and cosines:
        floor = max(floor, tuning.gate_coverage)
    near = tuning.record_cosine
    return [r for r in records if cosines.get(r.id, -1.0) >= near or cover[r.id] >= floor]


def holds(text: str, word: str) -> bool:
    """Whether lowercased `text` holds query word `word` (`code` is in `codes`)."""
    if len(word) > 3:
        return word in text
    # A short word (a number, an initial) must stand alone: `4` is not in `4417`.
    return re.search(r"\b" + re.escape(word) + r"\b", text) is not None
