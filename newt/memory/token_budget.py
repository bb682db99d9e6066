"""TokenBudget: keep the conversation within a share of the context window.

Fullness (`used`) is anchored on the backend's
last-reported prompt size, which already counts the system prompt and every
resident turn, plus an estimate of what was added or removed since:
`used = max(0, reported + delta)`. Before any report it is the sum of the
resident items' estimates, each counted once. Summing input+output over the
history would count every earlier turn again in every later reading (measured:
5.4x inflation by turn 20), so it is never done.

Not re-entrant: one conversation drives a provider from one task at a time.
"""

from __future__ import annotations

from collections.abc import Sequence

from newt.memory.budget_restore import WorkingTurn, plan_restore
from newt.memory.budget_summaries import SummaryLedger
from newt.memory.compaction import (
    RECORD_SHARE,
    base_summary,
    format_record,
    owed_body,
    owed_folds,
)
from newt.memory.types import (
    DEFAULT_CONTEXT_TOKENS,
    ConversationTurn,
    MemMessage,
    TurnMetrics,
)

_Turn = WorkingTurn
_NEEDS_KEPT = 4  # recent requests whose needs the fold at a turn's end leaves room for


class TokenBudget(SummaryLedger):
    name = "token_budget"

    def __init__(
        self, max_tokens: int = DEFAULT_CONTEXT_TOKENS, threshold_pct: float = 0.80
    ) -> None:
        super().__init__()
        self._configure(max_tokens, threshold_pct)
        self.reset()

    # -- conversation state ----------------------------------------------------

    def reset(self) -> None:
        self._turns: list[_Turn] = []
        self._record: str | None = None
        self._anchor: int | None = None  # last reported prompt size (or restored fullness)
        self._delta = 0
        self._pending: str | None = None
        self._compactions = 0
        self._total_turns = 0
        self._unsummarized: list[_Turn] = []  # folded; the record's owed part counts them
        self._owed_folds = 0  # fold steps since the last summary landed
        self._guard_folded = False  # this turn's pre-send guard folded (one step with its prune)
        self._needs: list[int] = []  # what the last requests needed beside the history
        self._ceiling: int | None = None  # the live ceiling the last request was fitted to
        self._focus: str | None = None
        self.summary_failure: str | None = None  # why the last summary was not written
        self.estimator.new_conversation()

    @property
    def used(self) -> int:
        if self._anchor is None:
            return self._fallback_sum()
        return max(0, self._anchor + self._delta)

    def usage(self) -> tuple[str, int, int]:
        return ("tokens", self.used, self.budget)

    # what it can do beyond the protocol: all three (newt.memory.provider)
    def anchored(self) -> TokenBudget:
        return self

    def calibrating(self) -> TokenBudget:
        return self

    def summarizing(self) -> TokenBudget:
        return self

    def resident_turns(self) -> int:
        return len(self._turns)

    @property
    def last_reported(self) -> int | None:
        """The anchor of `used`: the backend's last prompt size, or after a
        restore the fullness recorded with the last compaction record; None
        while `used` is the fallback sum."""
        return self._anchor

    @property
    def estimate_delta(self) -> int:
        """Estimated tokens added (or, negative, removed) since the anchor."""
        return self._delta if self._anchor is not None else 0

    @property
    def compactions(self) -> int:
        """Compaction records in this conversation, restored ones included."""
        return self._compactions

    @property
    def total_turns(self) -> int:
        """Ordinary turns in this conversation, resident or not."""
        return self._total_turns

    @property
    def record(self) -> str | None:
        """The compaction record at the head of the working set, if any."""
        return self._record

    def shift_anchor(self, tokens: int) -> None:
        """The fixed part of the prompt (the system message) grew by `tokens`
        (shrank, if negative) since the anchor was reported. The fallback sum
        never counts the system message, so it needs nothing."""
        if self._anchor is not None:
            self._delta += tokens

    def take_compaction_record(self) -> str | None:
        record, self._pending = self._pending, None
        return record

    # -- estimates ---------------------------------------------------------

    def _tokens(self, text: str) -> int:
        return self.estimator.message(text)

    def _reply(self, turn: _Turn) -> int:
        return self.estimator.reply(turn.assistant, turn.reply_tokens)

    def _est(self, turn: _Turn) -> int:
        """A turn's share of the prompt: what folding it away takes out."""
        return self.estimator.turn(turn.user, turn.assistant, turn.reply_tokens)

    def _fallback_sum(self) -> int:
        head = self._tokens(self._record) if self._record is not None else 0
        return head + sum(self._est(t) for t in self._turns)

    # -- messages ----------------------------------------------------------

    def build_messages(self, system_prompt: str, new_task: str) -> list[MemMessage]:
        messages = [MemMessage("system", self.compose_system_prompt(system_prompt))]
        if self._record is not None:
            messages.append(MemMessage("user", self._record))
        for turn in self._turns:
            messages.append(MemMessage("user", turn.user))
            if turn.assistant:
                messages.append(MemMessage("assistant", turn.assistant))
        messages.append(MemMessage("user", new_task))
        # Remembered so calibration can pair it with the next usage report.
        self.estimator.remember_prompt(
            messages, [t.reply_tokens for t in self._turns if t.assistant]
        )
        return messages

    # -- turns -------------------------------------------------------------

    async def sync_turn(self, user: str, assistant: str, metrics: TurnMetrics) -> None:
        usage = metrics.usage
        turn = _Turn(user, assistant, usage.output_tokens if usage is not None else None)
        self._turns.append(turn)
        self._total_turns += 1
        if usage is not None:
            self.estimator.observe_report(usage.input_tokens)
            self._anchor = usage.input_tokens
            self._delta = self._reply(turn)  # the reply is not in that report yet
        else:
            self._delta += self._est(turn)
        # the newest turn stays, unless alone it leaves the conversation over its
        # budget (a tiny window): the fullness is within the budget after a turn
        older = sum(self._est(t) for t in self._turns[:-1])
        keep = 0 if self.used - older > self.budget else 1
        limit = self._room_for_next()
        target = limit - (self.budget - self.fold_target)
        await self._prune(limit=limit, keep=keep, target=target)
        self._guard_folded = False

    def _room_for_next(self) -> int:
        """What the history may hold after a turn: the budget, less what the
        next request is expected to need beside it (the most of the last
        few requests' needs, capsules and reply reserve included). A fold
        here, at the turn's end, has its summary land before the next
        request; the pre-send guard's fold would break two requests' start."""
        if self._ceiling is None or not self._needs:
            return self.budget
        return max(0, min(self.budget, self._ceiling - max(self._needs)))

    async def compact(self, focus: str | None = None) -> bool:
        """`/compact [focus]`: fold every turn but the newest into the record.

        Returns False when there was nothing to fold. The caller persists
        take_compaction_record() right away (no turn is in flight).
        """
        if len(self._turns) <= 1:
            return False
        return await self._prune(limit=self.budget, keep=1, force=True, focus=focus)

    async def compact_for(self, required_tokens: int, *, limit: int | None = None) -> bool:
        """The pre-send guard: fold the oldest turns until `used + required_tokens`
        fits `limit` (default: the budget). Returns whether it fits now.

        `required_tokens` is the new message (plus anything sent with it only
        once, like recall capsules) and the reply reserve. Every resident turn
        may go here, the newest too: the new message is not a turn yet, and a
        request that does not fit would fail outright. The record minted here
        stays pending; take it after the turn's sync_turn so it is persisted
        after the turn it precedes in the working set. A call with a need
        is remembered even when nothing folds: the fold at a turn's end
        leaves room for the next request like it (`_room_for_next`).
        """
        ceiling = self.budget if limit is None else limit
        if required_tokens > 0 and self._anchor is not None:
            # a request's need beside a reported history (before a report it holds
            # the system prompt too): the next turn's end leaves room for one like it
            self._needs = [*self._needs[1 - _NEEDS_KEPT :], required_tokens]
            self._ceiling = ceiling
        # down to the low-water mark, as after a turn: the next requests keep this one's start
        target = ceiling - (self.budget - self.fold_target)
        if await self._prune(limit=ceiling, keep=0, required=required_tokens, target=target):
            self._guard_folded = True
        return self.used + required_tokens <= ceiling

    # -- pruning -----------------------------------------------------------

    def _oldest_to_remove(
        self, *, limit: int, keep: int, required: int, force: bool, target: int | None = None
    ) -> int:
        """How many of the oldest turns must go, once `used + required` is over
        `limit`, for it to be at most `target` (default: `limit`)."""
        used = self.used
        if not force and used + required <= limit:
            return 0
        goal = limit if target is None else min(target, limit)
        if self._record is None:
            # The first fold adds a record: plan with at least the size of
            # one owing a turn, so one round usually suffices.
            used += self._tokens(format_record(self._owed_body(None, [_Turn("", "-")], 1)))
        n = 0
        while len(self._turns) - n > keep and (force or used + required > goal):
            used -= self._est(self._turns[n])
            n += 1
        return n

    async def _prune(
        self,
        *,
        limit: int,
        keep: int,
        required: int = 0,
        force: bool = False,
        focus: str | None = None,
        target: int | None = None,
    ) -> bool:
        """Fold the oldest turns into the record until the target is met, then
        summarize them at once unless summaries are deferred (see
        `with_deferred_summaries`)."""
        folded = self._fold_until(
            limit=limit, keep=keep, required=required, force=force, target=target
        )
        if focus:
            self._focus = focus
        if folded and not self.defer_summaries:
            await self.refresh_summary()
        return folded

    def _fold_until(
        self,
        *,
        limit: int,
        keep: int,
        required: int = 0,
        force: bool = False,
        target: int | None = None,
    ) -> bool:
        """Fold with the owed body (the user's words, no model call): synchronous,
        so nothing can interleave between planning a fold and applying it.
        Repeats when the new record itself pushed `used` back over (it is
        capped, so this ends). One turn's folds (its pre-send guard's and
        its own) are one step of the record's count. Once over `limit`, down
        to `target` (the low-water mark, `fold_target`), so the turns after
        it append to an unchanged request."""
        folded = False
        while n := self._oldest_to_remove(
            limit=limit, keep=keep, required=required, force=force, target=target
        ):
            self._unsummarized.extend(self._turns[:n])
            if not folded and not self._guard_folded:
                self._owed_folds += 1
            summary = base_summary(self._record)
            self._apply(n, self._owed_body(summary, self._unsummarized, self._owed_folds))
            folded, force = True, False
            if target is not None:  # the record grew with what it owes: on to the mark
                limit = min(limit, target)
        return folded

    def _owed_body(self, summary: str | None, owed: Sequence[_Turn], folds: int) -> str:
        pairs = [(t.user, t.assistant) for t in owed]
        return owed_body(
            summary, pairs, folds, cap=self._record_cap(), est=self.estimator.content()
        )

    # -- summaries -----------------------------------------------------------
    def _apply(self, n: int, summary: str) -> None:
        removed, self._turns = self._turns[:n], self._turns[n:]
        if self._anchor is not None:
            self._delta -= sum(self._est(t) for t in removed)
        self._replace_record(format_record(summary))

    def _replace_record(self, record: str) -> None:
        if self._anchor is not None:
            if self._record is not None:
                self._delta -= self._tokens(self._record)
            self._delta += self._tokens(record)
        self._record = record
        if self._pending is None:  # a superseded, untaken record is the same event
            self._compactions += 1
        self._pending = record

    def _record_cap(self) -> int:
        frame = self._tokens(format_record(""))
        return max(16, int(self.budget * RECORD_SHARE) - frame)

    # -- restore -----------------------------------------------------------

    def restore_turns(self, turns: Sequence[ConversationTurn]) -> None:
        """Rebuild the working set and fullness from the durable log (section 3).

        Synchronous, so it never calls the summarizer: when the log needs
        pruning (a crash between a turn and its record), the oldest turns are
        folded into the record with the owed part and the record is left
        pending, so the caller's next take_compaction_record() persists it.
        Folded turns the record's owed part counts await a summary again, in
        as many fold steps as it says.
        """
        self.reset()
        plan = plan_restore(turns, self.estimator)
        self._record, self._turns = plan.record, plan.turns
        self._anchor, self._delta = plan.anchor, plan.delta
        self._total_turns, self._compactions = plan.total_turns, plan.compactions
        self._unsummarized = plan.unsummarized
        self._owed_folds = owed_folds(self._record) if self._record and self._unsummarized else 0
        self._fold_until(limit=self.budget, keep=1)
