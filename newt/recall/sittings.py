"""The lift of being said in a sitting where other things matched the query
too (docs/design.md section 7).

A sitting is a run of one conversation's messages with no pause longer than
`gap` seconds between them. Here it is read off the candidates alone: the
best `depth` of them, in the order they were said, start a new sitting at
each pause; a candidate below them joins the sitting whose nearest member
was said within `gap` of it. Each sitting is worth the sum of its `top` best
scores; a message scores (1 + `share` x its sitting's worth as a share of the
best sitting's) times as high.

Why: what a question asks about is usually talked over in one sitting, so a
message said beside other matches is likelier the one asked for than an
equally good match said alone (a turn that says "them" where the question
names the thing is found by the sitting it sits in).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import replace

from newt.store.models import MemoryRecord

# What a sitting is: messages with no pause longer than this between them.
SITTING_GAP_S = 3600.0

_MESSAGE_ROLES = ("user", "assistant", "tool")


def _is_message(record: MemoryRecord) -> bool:
    return record.source == "turn" and record.role in _MESSAGE_ROLES


def with_sittings(
    records: Sequence[MemoryRecord],
    share: float,
    *,
    depth: int,
    top: int,
    gap: float = SITTING_GAP_S,
) -> list[MemoryRecord]:
    """`records` (best first) rescored by the sittings they were said in,
    best first. Notes and summaries were said in no sitting: unchanged."""
    if share <= 0 or not records:
        return list(records)
    ranked = sorted(records, key=lambda r: -r.score)
    heads = [r for r in ranked[:depth] if _is_message(r)]
    # conversation -> (said_at of each member, sitting of each member), by time
    times: dict[str | None, list[float]] = {}
    sitting_at: dict[str | None, list[int]] = {}
    worth: list[list[float]] = []
    for r in sorted(heads, key=lambda r: (r.conversation_id or "", r.said_at)):
        said = times.setdefault(r.conversation_id, [])
        marks = sitting_at.setdefault(r.conversation_id, [])
        if not said or r.said_at - said[-1] > gap:
            worth.append([])
        said.append(r.said_at)
        marks.append(len(worth) - 1)
        worth[-1].append(r.score)
    value = [sum(sorted(scores, reverse=True)[:top]) for scores in worth]
    best = max(value, default=0.0)
    if best <= 0:
        return ranked

    def sitting(r: MemoryRecord) -> int | None:
        said = times.get(r.conversation_id)
        if not said or not _is_message(r):
            return None
        at = bisect.bisect_left(said, r.said_at)
        near = [n for n in (at - 1, at) if 0 <= n < len(said)]
        n = min(near, key=lambda n: abs(said[n] - r.said_at))
        return sitting_at[r.conversation_id][n] if abs(said[n] - r.said_at) <= gap else None

    rescored = []
    for r in ranked:
        s = sitting(r)
        lift = 1.0 + share * value[s] / best if s is not None else 1.0
        rescored.append(replace(r, score=r.score * lift) if lift != 1.0 else r)
    return sorted(rescored, key=lambda r: -r.score)
