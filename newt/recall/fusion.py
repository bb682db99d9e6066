"""One ranking from the words' and the meaning's, the lift of being said
when the query says, and of a turn whose two halves both match
(docs/design.md section 7; the weights are recall.tuning.RecallTuning's).

Scores, not only ranks, take part: a record far ahead of the rest in one
ranking stays ahead (with reciprocal ranks the meaning path had cost recall).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from newt.store.models import MemoryRecord


def _unit_scores(
    ranking: Sequence[tuple[int, float]], *, lower_is_better: bool
) -> dict[int, float]:
    """Scores of one ranking as shares of its best (1.0: the best; never below 0)."""
    values = {rowid: max(0.0, -s if lower_is_better else s) for rowid, s in ranking}
    best = max(values.values(), default=0.0)
    if best <= 0:
        return {rowid: 1.0 for rowid in values}
    return {rowid: v / best for rowid, v in values.items()}


def fuse(
    lexical: Sequence[tuple[int, float]],
    nearest: Sequence[tuple[int, float]],
    lexical_weight: float,
) -> list[tuple[int, float]]:
    """The lexical (rowid, bm25) and meaning (rowid, cosine) rankings as one,
    best first: each score taken as a share of its ranking's best, then
    weighted and summed (a record missing from a ranking scores 0 there).

    Scores, not only ranks, take part: a record far ahead of the rest in
    one ranking stays ahead. Ties keep the lexical order (its matches are
    exact)."""
    words = _unit_scores(lexical, lower_is_better=True)
    meaning = _unit_scores(nearest, lower_is_better=False)
    if not meaning:
        return [(rowid, words[rowid]) for rowid, _ in lexical]
    order = {rowid: n for n, (rowid, _) in enumerate(lexical)}
    fused = {
        rowid: lexical_weight * words.get(rowid, 0.0)
        + (1.0 - lexical_weight) * meaning.get(rowid, 0.0)
        for rowid in {*words, *meaning}
    }
    return sorted(fused.items(), key=lambda item: (-item[1], order.get(item[0], len(order))))


def boost(
    fused: Sequence[tuple[int, float]],
    lexical: Sequence[tuple[int, float]],
    said: Sequence[tuple[int, float]],
    lexical_weight: float,
    weight: float,
) -> list[tuple[int, float]]:
    """The fused ranking with each record said in the query's time span
    scored (1 + `weight`) times as high, best first. A record of the span the
    ranking had not reached scores its words' share (its bm25 against the
    best of `lexical`) there. Being said then multiplies how well a record
    matches; it never lifts one that matches badly."""
    scores = dict(fused)
    best = max((-s for _, s in (*lexical, *said)), default=0.0)
    for rowid, rank in said:
        base = scores.get(rowid)
        if base is None:
            base = lexical_weight * (max(0.0, -rank) / best if best > 0 else 1.0)
        scores[rowid] = base * (1.0 + weight)
    order = {rowid: n for n, (rowid, _) in enumerate(fused)}
    return sorted(scores.items(), key=lambda item: (-item[1], order.get(item[0], len(order))))


def with_pairs(records: Sequence[MemoryRecord], share: float) -> list[MemoryRecord]:
    """`records` rescored, best first: a user's message and its reply that
    both matched each gain `share` of the other's score.

    Why: the exchange that answers a question often holds its words across
    both halves ("How long have you had them?" / "Three years now!"), yet
    each message stays scored on its own words first."""
    if share <= 0:
        return list(records)
    halves: dict[int, list[MemoryRecord]] = {}
    for r in records:
        if r.turn_id is not None and r.role in ("user", "assistant"):
            halves.setdefault(r.turn_id, []).append(r)
    gain: dict[int, float] = {}
    for pair in halves.values():
        if len(pair) == 2:
            first, second = pair
            gain[first.id] = share * second.score
            gain[second.id] = share * first.score
    rescored = [replace(r, score=r.score + gain[r.id]) if r.id in gain else r for r in records]
    return sorted(rescored, key=lambda r: -r.score)
