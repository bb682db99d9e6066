"""Recall evidence for one request: what to look up, how much may ride along.

The retained-evidence budget is a share (`EVIDENCE_SHARE`) of what the
conversation may fill in a request: the window less the reply reserve, the
system prompt and the tool schemas; capped by `[recall]
retained_token_budget`. At most half, so the recent turns always keep at
least half and a chat still reads as a chat. The budget holds the block as
rendered (header, day lines and keys included). The capsules ride in the
request only (never in the working set), and the pre-send guard counts them
like the rest of the prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from newt.config import Config
from newt.recall.engine import RecallEngine, RecallRequest
from newt.recall.retention import RetentionReport
from newt.store import NoteRepo

# Share of what the conversation may fill that the capsules of one request
# may take; benchmarks/locomo.py chose it (README).
EVIDENCE_SHARE = 0.5
# Below this the capsules would not hold one useful excerpt: recall is skipped.
MIN_EVIDENCE_TOKENS = 48
# Records recall may offer per request, at least: packing then keeps what
# fits. A large budget is offered one record per CAPSULE_TOKENS of it (a
# short message's capsule), so it can fill with what was found.
RECALL_LIMIT = 64
CAPSULE_TOKENS = 24
# Recall packs this many times the budget: its packing knows neither the
# block's header nor which capsules share a day line, so the block as
# rendered (presentation.fit_block) chooses among more than fits.
OFFER_FACTOR = 2


def evidence_budget(configured: int, room: int) -> int:
    """Tokens of capsules per request: a share of the room a request has
    besides the reply reserve, capped by the config (0: recall off)."""
    if configured <= 0:
        return 0
    budget = min(configured, int(room * EVIDENCE_SHARE))
    return budget if budget >= MIN_EVIDENCE_TOKENS else 0


@dataclass
class Gathered:
    """What recall found for one request, and what the prompt says about its time."""

    report: RetentionReport | None
    """What recall offers: more than fits; `fit_block` into `budget` chooses."""
    budget: int
    """Tokens the block as rendered may take."""
    now: float
    history_since: float | None
    """When the oldest message the request carries was said (None: no history)."""


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
        count_hits: bool = True,
    ) -> Gathered:
        """Capsules for `text`, leaving out what the model already sees:
        resident turns, the current record and notes (in the system prompt).
        `count_hits=False`: a preview (/recall), not a use of the records."""
        now = self.recall.db.clock()
        budget = self.budget(fixed_tokens)
        history_since = await self.recall.said_since(resident)
        if budget <= 0:
            return Gathered(None, 0, now, history_since)
        exclude = set(resident) | await self.notes.record_keys()
        response = await self.recall.recall(
            RecallRequest(
                text,
                limit=max(RECALL_LIMIT, budget // CAPSULE_TOKENS),
                retained_token_budget=budget * OFFER_FACTOR,
            ),
            exclude_keys=exclude,
            now=now,
            count_hits=count_hits,
        )
        return Gathered(response.retained_evidence, budget, now, history_since)
