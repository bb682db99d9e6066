"""The summaries TokenBudget owes for folded turns (docs/design.md section 4).

A fold puts the user's words of the folded turns in the record at once (the
owed part); the summary of those turns is written later, by the model, and
applied only while the record and the folded turns it was written from are
still the ones owed. Kept apart from the working set (token_budget.py), which
folds and restores: this side asks the model and decides when it is due.
"""

from __future__ import annotations

from collections.abc import Sequence

from newt.memory.budget_restore import WorkingTurn
from newt.memory.budget_settings import BudgetSettings
from newt.memory.compaction import (
    SUMMARIZER_INPUT_SHARE,
    base_summary,
    format_record,
    write_summary,
)
from newt.memory.provider import BaseProvider
from newt.memory.types import PendingSummary


class SummaryLedger(BudgetSettings, BaseProvider):
    """TokenBudget's summaries: what is owed, when it is due, asking and applying."""

    _unsummarized: list[WorkingTurn]  # folded; the record's owed part counts them
    _owed_folds: int  # fold steps since the last summary landed
    _record: str | None
    _focus: str | None
    summary_failure: str | None  # why the last summary was not written

    # the working set's side (token_budget.py)
    def _fold_until(self, *, limit: int, keep: int) -> bool:
        raise NotImplementedError

    def _owed_body(self, summary: str | None, owed: Sequence[WorkingTurn], folds: int) -> str:
        raise NotImplementedError

    def _replace_record(self, record: str) -> None:
        raise NotImplementedError

    def _record_cap(self) -> int:
        raise NotImplementedError

    @property
    def summary_pending(self) -> bool:
        """Folded turns wait for a summary (the record carries the owed part)."""
        return bool(self._unsummarized) and self.summarizer is not None

    @property
    def summary_overdue(self) -> bool:
        """The session writes the summary before the next request rather than
        let a steady conversation keep preempting it (BackgroundSummary.settle).
        With folds down to a low-water mark (`fold_to` < 1), from the first
        step: the request after a fold is read afresh anyway, so a summary
        that enters it costs no cached prefix, while one landing a turn later
        would change the request's start again. Folding just enough each
        turn, once more than one step waits."""
        steps = 1 if self.fold_to < 1 else 2
        return self.summary_pending and self._owed_folds >= steps

    @property
    def owed_steps(self) -> int:
        """Fold steps (a turn's folds count as one) whose summary is not written yet."""
        return self._owed_folds if self._unsummarized else 0

    @property
    def summary_reply_tokens(self) -> int:
        """The most a summary can use: the record's cap (anything longer is cut)."""
        return self._record_cap()

    async def summarize_pending(self) -> PendingSummary | None:
        """Write the summary of the folded, unsummarized turns. Mutates nothing:
        `apply_summary` applies it, so the caller can await this without
        holding the conversation and apply it between turns."""
        if not self.summary_pending:
            return None
        batch = list(self._unsummarized)
        basis = self._summary_basis(len(batch))
        folds = self._owed_folds
        summary = await self._summarize(batch, basis[0], self._focus)
        if summary is None:
            return None
        self.summary_failure = None
        return PendingSummary(basis, len(batch), summary, folds)

    def _summary_basis(self, turns: int) -> tuple[str | None, tuple[tuple[str, str], ...]]:
        folded = tuple((t.user, t.assistant) for t in self._unsummarized[:turns])
        return base_summary(self._record), folded

    def apply_summary(self, result: PendingSummary | None) -> bool:
        """Put a finished summary in the record (minting a new pending record).
        False when it no longer fits: the conversation was reset, or the record
        or the folded turns it was written from changed."""
        if result is None or len(self._unsummarized) < result.turns:
            return False
        if self._summary_basis(result.turns) != result.basis:
            return False
        del self._unsummarized[: result.turns]
        self._focus = None
        # folds made while it was written stay owed (at least one if turns are)
        left = self._owed_folds - result.folds
        self._owed_folds = max(left, 1) if self._unsummarized else 0
        body = self._owed_body(result.summary, self._unsummarized, self._owed_folds)
        self._replace_record(format_record(body))
        self._fold_until(limit=self.budget, keep=1)
        return True

    async def refresh_summary(self) -> bool:
        """Summarize and apply in one step (no turn may run meanwhile)."""
        return self.apply_summary(await self.summarize_pending())

    async def _summarize(
        self, removed: Sequence[WorkingTurn], previous: str | None, focus: str | None
    ) -> str | None:
        if self.summarizer is None:
            return None
        failures: list[str] = []
        summary = await write_summary(
            self.summarizer,
            self.on_pre_compress,
            [(t.user, t.assistant) for t in removed],
            previous,
            focus=focus,
            input_cap=int(self.budget * SUMMARIZER_INPUT_SHARE),
            record_cap=self._record_cap(),
            est=self.estimator.content(),
            failures=failures,
        )
        self.summary_failure = failures[-1] if failures else self.summary_failure
        return summary
