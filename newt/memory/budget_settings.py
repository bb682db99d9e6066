"""TokenBudget's configuration: the budget, the estimate and the summarizer.

Kept apart from the conversation state (token_budget.py) because `reset()`
keeps all of it: it belongs to the provider, not to one conversation.
"""

from __future__ import annotations

import math
from typing import Self

from newt.memory.calibration import Calibrator
from newt.memory.compaction import Summarizer
from newt.memory.estimator import TurnEstimator
from newt.memory.types import Estimator

MIN_CONTEXT_TOKENS = 512
MIN_THRESHOLD, MAX_THRESHOLD = 0.10, 0.99
MIN_FOLD_TO = 0.10


class BudgetSettings:
    max_tokens: int
    threshold_pct: float
    fold_to: float
    budget_source: str
    estimator: TurnEstimator
    summarizer: Summarizer | None
    defer_summaries: bool

    def _configure(self, max_tokens: int, threshold_pct: float) -> None:
        self.max_tokens = max(int(max_tokens), MIN_CONTEXT_TOKENS)
        self.threshold_pct = min(max(float(threshold_pct), MIN_THRESHOLD), MAX_THRESHOLD)
        self.fold_to = 1.0
        self.budget_source = "default"
        self.estimator = TurnEstimator()
        self.summarizer = None
        self.defer_summaries = False

    @property
    def budget(self) -> int:
        # The epsilon keeps e.g. 24000 * 0.8 = 19199.999... from flooring low.
        return math.floor(self.max_tokens * self.threshold_pct + 1e-9)

    @property
    def fold_target(self) -> int:
        """What a fold leaves the conversation at: `fold_to` of the budget."""
        return math.floor(self.budget * self.fold_to + 1e-9)

    def with_fold_to(self, share: float) -> Self:
        """Fold down to `share` of the budget when it is exceeded, not just under
        it: the next turns append to a request that stays the same from its
        start, which a server's prompt cache reads once (docs/design.md section 4)."""
        self.fold_to = min(max(float(share), MIN_FOLD_TO), 1.0)
        return self

    @property
    def estimation(self) -> Estimator:
        """The estimate in force (see TurnEstimator)."""
        return self.estimator.estimation

    @property
    def calibrator(self) -> Calibrator | None:
        return self.estimator.calibrator

    def with_estimation(self, est: Estimator) -> Self:
        self.estimator.plain = est
        return self

    def with_budget(self, tokens: int, source: str = "injected") -> Self:
        """Inject the caller's resolved context size (same 512 floor as __init__)
        and say where it came from ("config", "backend", "probe cache", "default")."""
        self.max_tokens = max(int(tokens), MIN_CONTEXT_TOKENS)
        self.budget_source = source
        return self

    def with_summarizer(self, fn: Summarizer | None) -> Self:
        self.summarizer = fn
        return self

    def with_deferred_summaries(self, defer: bool = True) -> Self:
        """Fold with the fallback body and leave the summary to the caller
        (`summarize_pending` + `apply_summary`), so a turn that compacts
        does not wait for the model to write a summary."""
        self.defer_summaries = defer
        return self

    def with_calibration(self, calibrator: Calibrator | None = None) -> Self:
        """Learn the estimate from the backend's usage reports (calibration.py).

        Off by default, so estimates follow the fixed chars_per_token.
        Seed it with the capability cache's ratio: `Calibrator(cached_ratio)`.
        """
        self.estimator.calibrate(calibrator)
        return self

    def set_chars_per_token(
        self,
        ratio: float,
        per_message_tokens: float | None = None,
        per_reply_tokens: float | None = None,
    ) -> None:
        """Turn calibration on from figures learned earlier for this model."""
        self.estimator.seed(ratio, per_message_tokens, per_reply_tokens)

    @property
    def learned_glue(self) -> tuple[float, float] | None:
        """Template tokens per message and per reply, once reports shaped them."""
        learned = self.estimator.learned
        return None if learned is None else (learned[1], learned[2])

    @property
    def learned_chars_per_token(self) -> float | None:
        """The calibrated ratio once a report shaped it (to persist), else None."""
        learned = self.estimator.learned
        return None if learned is None else learned[0]

    def tokens_for(self, text: str) -> int:
        """The estimate in force for one prompt-side message (e.g. the next
        user message, for the pre-send guard)."""
        return self.estimator.message(text)

    def content_tokens(self, text: str) -> int:
        """The estimate in force for a piece of a message (no message glue):
        what the evidence block is packed in."""
        return self.estimator.content().tokens_for(text)
