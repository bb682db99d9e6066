"""Recall evidence for one request: what to look up, how much may ride along.

The retained-evidence budget is a share of the resolved context window,
capped by `[recall] retained_token_budget`: a fixed 1,024 tokens would be half
of a 2,048-token window and a rounding error of a 128k one. The capsules ride
in the request only (never in the working set), and the pre-send guard counts
them like the rest of the prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from newt.config import Config
from newt.recall import RecallEngine, RecallRequest, RetentionReport
from newt.store import NoteRepo

# Share of the context window the capsules of one request may take.
EVIDENCE_WINDOW_SHARE = 0.125
# Below this the capsules would not hold one useful excerpt: recall is skipped.
MIN_EVIDENCE_TOKENS = 48
RECALL_LIMIT = 8
# What a capsule's key and framing cost on top of its excerpt, in tokens.
CAPSULE_OVERHEAD = 4


def evidence_budget(configured: int, context_tokens: int) -> int:
    """Tokens of capsules per request: a share of the window, capped by the config."""
    if configured <= 0:
        return 0
    share = int(context_tokens * EVIDENCE_WINDOW_SHARE)
    budget = min(configured, share)
    return budget if budget >= MIN_EVIDENCE_TOKENS else 0


def evidence_limit(budget: int, excerpt_tokens: int) -> int:
    """How many records recall may offer: no more than the budget holds at full
    excerpt length. Packing goes by recoverability (DESIGN.md section 5), which
    grows with every hit; offered more records than fit, the often-recalled
    ones filled a small budget and the best match for a question never asked
    before was dropped (seen with meaning-based recall, which always offers a
    full list). Offered only what fits, every best match is packed."""
    fits = budget // max(1, excerpt_tokens + CAPSULE_OVERHEAD)
    return max(1, min(RECALL_LIMIT, fits))


class EvidenceSource:
    def __init__(
        self,
        recall: RecallEngine,
        notes: NoteRepo,
        config: Config,
        context_tokens: Callable[[], int],
    ) -> None:
        self.recall = recall
        self.notes = notes
        self.config = config
        self.context_tokens = context_tokens

    def budget(self) -> int:
        return evidence_budget(self.config.recall.retained_token_budget, self.context_tokens())

    async def gather(self, text: str, resident: Collection[str]) -> RetentionReport | None:
        """Capsules for `text`, leaving out what the model already sees:
        resident turns, the current record and notes (in the system prompt)."""
        budget = self.budget()
        if budget <= 0:
            return None
        exclude = set(resident) | await self.notes.record_keys()
        response = await self.recall.recall(
            RecallRequest(
                text,
                limit=evidence_limit(budget, self.config.recall.excerpt_tokens),
                retained_token_budget=budget,
            ),
            exclude_keys=exclude,
        )
        return response.retained_evidence
