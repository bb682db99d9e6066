"""Reading the durable log back into TokenBudget's working set (docs/design.md section 4).

The working set is `[last record]` + the `resident_turns` ordinary turns just
before it + every turn after it (no record: all turns). Fullness is anchored
on the last turn after the record that carries the backend's `tokens_in`,
else on the record's `used_after`, else it is the fallback sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from newt.memory.compaction import message_count, unsummarized_messages
from newt.memory.estimator import TurnEstimator
from newt.memory.types import ConversationTurn


@dataclass
class WorkingTurn:
    """One resident turn as TokenBudget keeps it."""

    user: str
    assistant: str
    reply_tokens: int | None = None  # the backend's completion_tokens, when reported


@dataclass
class RestorePlan:
    record: str | None = None
    turns: list[WorkingTurn] = field(default_factory=list)
    anchor: int | None = None
    delta: int = 0
    total_turns: int = 0
    compactions: int = 0
    unsummarized: list[WorkingTurn] = field(default_factory=list)


def plan_restore(turns: Sequence[ConversationTurn], est: TurnEstimator) -> RestorePlan:
    plan = RestorePlan()
    last = max((i for i, t in enumerate(turns) if t.is_compaction), default=None)
    ordinary = [t for t in turns if not t.is_compaction]
    plan.total_turns = len(ordinary)
    plan.compactions = sum(1 for t in turns if t.is_compaction)
    before: list[ConversationTurn] = []
    after = ordinary
    if last is not None:
        plan.record = turns[last].user
        folded = [t for t in turns[:last] if not t.is_compaction]
        keep = max(0, turns[last].resident_turns or 0)
        split = max(0, len(folded) - keep)
        before, folded = folded[split:], folded[:split]
        after = list(turns[last + 1 :])
        plan.unsummarized = awaiting_summary(folded, plan.record)
    plan.turns = [
        WorkingTurn(t.user, t.assistant, t.tokens_out if t.tokens_in is not None else None)
        for t in (*before, *after)
    ]
    resident_after = plan.turns[len(before) :]
    reported = max((i for i, t in enumerate(after) if t.tokens_in is not None), default=None)
    if reported is not None:
        plan.anchor = after[reported].tokens_in
        anchor_turn = resident_after[reported]
        plan.delta = est.reply(anchor_turn.assistant, anchor_turn.reply_tokens) + sum(
            est.turn(t.user, t.assistant, t.reply_tokens) for t in resident_after[reported + 1 :]
        )
    elif last is not None and turns[last].used_after is not None:
        plan.anchor = turns[last].used_after
        plan.delta = sum(est.turn(t.user, t.assistant, t.reply_tokens) for t in resident_after)
    return plan


def awaiting_summary(folded: Sequence[ConversationTurn], record: str) -> list[WorkingTurn]:
    """The newest folded turns the record's fallback line counts (its summary
    does not cover them yet), so a reopened conversation can summarize them."""
    pending = unsummarized_messages(record)
    out: list[WorkingTurn] = []
    for t in reversed(folded):
        if pending <= 0:
            break
        out.append(WorkingTurn(t.user, t.assistant))
        pending -= message_count([(t.user, t.assistant)])
    out.reverse()
    return out
