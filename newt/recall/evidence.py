"""Recall evidence for one request: what to look up, how much may ride along.

The retained-evidence budget is a share (`EVIDENCE_SHARE`) of what the
conversation may fill in a request: the window less the reply reserve, the
system prompt and the tool schemas; capped by `[recall]
retained_token_budget`. At most half, so the recent turns always keep at
least half and a chat still reads as a chat. The budget holds the block as
rendered (header and day lines included), counted as the request is. The
capsules ride in the request only (never in the working set), and the
pre-send guard counts them like the rest of the prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, replace

from newt.config import Config
from newt.recall.engine import RecallEngine, RecallRequest
from newt.recall.presentation import Packing
from newt.recall.retention import RetentionReport
from newt.store import NoteRepo

# Share of what the conversation may fill that the capsules of one request
# may take; benchmarks/locomo.py chose it (README).
EVIDENCE_SHARE = 0.5
# Below this the capsules would not hold one useful excerpt: recall is skipped.
MIN_EVIDENCE_TOKENS = 48
# Records recall may return per request, at least: packing keeps what fits.
# A large budget may return one record per CAPSULE_TOKENS of it (a short
# message's capsule), so it can fill with what was found.
RECALL_LIMIT = 64
CAPSULE_TOKENS = 24


def evidence_budget(configured: int, room: int) -> int:
    """Tokens of capsules per request: a share of the room a request has
    besides the reply reserve, capped by the config (0: recall off)."""
    if configured <= 0:
        return 0
    budget = min(configured, int(room * EVIDENCE_SHARE))
    return budget if budget >= MIN_EVIDENCE_TOKENS else 0


@dataclass
class Gathered:
    """What recall packed for one request: the capsules and the block."""

    report: RetentionReport | None
    block: str
    budget: int
    """Tokens the block as rendered may take."""


class EvidenceSource:
    def __init__(
        self,
        recall: RecallEngine,
        notes: NoteRepo,
        config: Config,
        room: Callable[[], int],
    ) -> None:
        self.recall = recall
        self.notes = notes
        self.config = config
        self.room = room

    def budget(self, fixed_tokens: int = 0) -> int:
        """Tokens of capsules per request, given what the system prompt and
        the tool schemas take (`fixed_tokens`)."""
        room = max(0, self.room() - fixed_tokens)
        return evidence_budget(self.config.recall.retained_token_budget, room)

    async def gather(
        self,
        text: str,
        resident: Collection[str],
        fixed_tokens: int = 0,
        *,
        packing: Packing | None = None,
        count_hits: bool = True,
    ) -> Gathered:
        """The block for `text`, leaving out what the model already sees:
        resident turns, the current record and notes (in the system prompt).
        `packing`: how the request is counted and read (its `history_since`
        is filled in here); `count_hits=False`: a preview (/recall), not a
        use of the records."""
        budget = self.budget(fixed_tokens)
        if budget <= 0:
            return Gathered(None, "", 0)
        packing = replace(
            packing or Packing(), history_since=await self.recall.said_since(resident)
        )
        exclude = set(resident) | await self.notes.record_keys()
        response = await self.recall.recall(
            RecallRequest(
                text,
                limit=max(RECALL_LIMIT, budget // CAPSULE_TOKENS),
                retained_token_budget=budget,
                packing=packing,
                from_user=True,
            ),
            exclude_keys=exclude,
            count_hits=count_hits,
        )
        return Gathered(response.retained_evidence, response.block, budget)
