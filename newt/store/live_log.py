"""The log as the conversation now stands: replaced turns out, counts corrected.

Compaction rows store how many ordinary turns were resident when they were
written. A turn replaced *after* such a row was counted there, so readers take
it out again (`effective_resident`); a replaced turn is always the newest one,
hence resident, when it is replaced. Pure functions over StoredTurn rows: the
restore (newt.memory.restore), the resident keys and the fork all read the log
through them, so they can never disagree.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import replace

from newt.store.models import StoredTurn

_RESIDENT_STATUSES = ("complete", "interrupted")


def effective_resident(
    rows: Sequence[StoredTurn], excluded: Collection[int] = ()
) -> dict[int, int]:
    """For each compaction row id: its resident-turn count without the turns
    replaced since it was written. `excluded` turns count as replaced now (a
    regenerate in flight, not yet marked in the store)."""

    def replaced_at(t: StoredTurn) -> float | None:
        if t.id in excluded:
            return math.inf
        return t.replaced_by

    out: dict[int, int] = {}
    for i, row in enumerate(rows):
        if row.kind != "compaction":
            continue
        keep = max(0, row.resident_turns or 0)
        live_then = [
            t
            for t in rows[:i]
            if t.kind == "turn"
            and t.status in _RESIDENT_STATUSES
            and ((at := replaced_at(t)) is None or at > row.id)
        ]
        window = live_then[len(live_then) - keep :] if keep else []
        out[row.id] = keep - sum(1 for t in window if replaced_at(t) is not None)
    return out


def live_rows(rows: Sequence[StoredTurn], excluded: Collection[int] = ()) -> list[StoredTurn]:
    """The log as the conversation now stands: replaced (and `excluded`) turns
    left out, compaction rows carrying their effective resident counts."""
    counts = effective_resident(rows, excluded)
    out: list[StoredTurn] = []
    for row in rows:
        if row.kind == "compaction":
            out.append(_with_resident(row, counts[row.id]))
        elif row.replaced_by is None and row.id not in excluded:
            out.append(row)
    return out


def _with_resident(row: StoredTurn, resident: int) -> StoredTurn:
    if row.resident_turns == resident:
        return row
    return replace(row, resident_turns=resident)


def fork_rows(rows: Sequence[StoredTurn], at_turn: int) -> list[StoredTurn]:
    """The rows a fork at turn `at_turn` copies: the live log up to the next
    ordinary turn after it (so compaction records written right after that
    turn come along: the fork starts in the memory state the original had
    then)."""
    cut = next(
        (r.id for r in rows if r.id > at_turn and r.kind == "turn" and r.replaced_by is None),
        None,
    )
    upto = [r for r in rows if cut is None or r.id < cut]
    return [r for r in live_rows(upto) if r.status != "pending"]
