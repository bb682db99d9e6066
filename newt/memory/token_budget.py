"""TokenBudget: keep the conversation within a share of the context window.

Fullness (`used`, DESIGN.md section 3) is anchored on the backend's
last-reported prompt size, which already counts the system prompt and every
resident turn, plus an estimate of what was added or removed since:
`used = max(0, reported + delta)`. Before any report it is the sum of the
resident items' estimates, each counted once. Summing input+output over the
history would count every earlier turn again in every later reading (the seed
measured 5.4x inflation by turn 20), so it is never done.

Not re-entrant: one conversation drives a provider from one task at a time.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Self

from newt.memory.calibration import CalibratedEstimation, Calibrator, PromptShape
from newt.memory.compaction import (
    RECORD_SHARE,
    SUMMARIZER_INPUT_SHARE,
    cap_summary,
    fallback_summary,
    format_record,
    message_count,
    record_summary,
    summarizer_input,
)
from newt.memory.provider import BaseProvider
from newt.memory.types import (
    DEFAULT_CONTEXT_TOKENS,
    ConversationTurn,
    Estimator,
    MemMessage,
    TokenEstimation,
    TurnMetrics,
)
from newt.resources import asset_text

logger = logging.getLogger(__name__)

MIN_CONTEXT_TOKENS = 512
MIN_THRESHOLD, MAX_THRESHOLD = 0.10, 0.99
COMPACTION_PROMPT_ASSET = "compaction_prompt.md"

Summarizer = Callable[[list[MemMessage]], Awaitable[str]]


@dataclass
class _Turn:
    user: str
    assistant: str
    reply_tokens: int | None = None  # the backend's completion_tokens, when reported


class TokenBudget(BaseProvider):
    name = "token_budget"

    def __init__(
        self, max_tokens: int = DEFAULT_CONTEXT_TOKENS, threshold_pct: float = 0.80
    ) -> None:
        super().__init__()
        self.max_tokens = max(int(max_tokens), MIN_CONTEXT_TOKENS)
        self.threshold_pct = min(max(float(threshold_pct), MIN_THRESHOLD), MAX_THRESHOLD)
        self.budget_source = "default"
        self._estimation: Estimator = TokenEstimation()
        self.summarizer: Summarizer | None = None
        self.calibrator: Calibrator | None = None
        self.reset()

    # -- configuration (kept by reset) ---------------------------------------

    @property
    def budget(self) -> int:
        # The epsilon keeps e.g. 24000 * 0.8 = 19199.999... from flooring low.
        return math.floor(self.max_tokens * self.threshold_pct + 1e-9)

    @property
    def estimation(self) -> Estimator:
        """The estimate in force: the calibrator's latest fit when calibrating."""
        return self.calibrator.estimation if self.calibrator is not None else self._estimation

    def with_estimation(self, est: Estimator) -> Self:
        self._estimation = est
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

    def with_calibration(self, calibrator: Calibrator | None = None) -> Self:
        """Learn the estimate from the backend's usage reports (calibration.py).

        Off by default, so estimates follow DESIGN.md's fixed chars_per_token.
        Seed it with the capability cache's ratio: `Calibrator(cached_ratio)`.
        """
        self.calibrator = calibrator or Calibrator.from_estimation(self._estimation)
        return self

    def set_chars_per_token(
        self,
        ratio: float,
        per_message_tokens: float | None = None,
        per_reply_tokens: float | None = None,
    ) -> None:
        """Turn calibration on, starting from figures learned earlier for this
        model (the capability cache's `chars_per_token` and template glue)."""
        glue = {
            k: float(v)
            for k, v in (
                ("per_message_tokens", per_message_tokens),
                ("per_reply_tokens", per_reply_tokens),
            )
            if v is not None
        }
        self.with_calibration(Calibrator(float(ratio), **glue))

    @property
    def learned_glue(self) -> tuple[float, float] | None:
        """Template tokens per message and per reply, once reports shaped them."""
        if self.calibrator is None or self.calibrator.observations == 0:
            return None
        return self.calibrator.per_message_tokens, self.calibrator.per_reply_tokens

    @property
    def learned_chars_per_token(self) -> float | None:
        """The calibrated ratio once a report shaped it (to persist), else None."""
        if self.calibrator is None or self.calibrator.observations == 0:
            return None
        return self.calibrator.chars_per_token

    def tokens_for(self, text: str) -> int:
        """The estimate in force for one prompt-side message (e.g. the next
        user message, for the pre-send guard)."""
        return self.estimation.tokens_for(text)

    # -- conversation state ----------------------------------------------------

    def reset(self) -> None:
        self._turns: list[_Turn] = []
        self._record: str | None = None
        self._anchor: int | None = None  # last reported prompt size (or restored fullness)
        self._delta = 0
        self._pending: str | None = None
        self._compactions = 0
        self._total_turns = 0
        self._last_prompt: PromptShape | None = None
        if self.calibrator is not None:
            self.calibrator.new_conversation()

    @property
    def used(self) -> int:
        if self._anchor is None:
            return self._fallback_sum()
        return max(0, self._anchor + self._delta)

    def usage(self) -> tuple[str, int, int]:
        return ("tokens", self.used, self.budget)

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

    def take_compaction_record(self) -> str | None:
        record, self._pending = self._pending, None
        return record

    # -- estimates ---------------------------------------------------------

    def _tokens(self, text: str) -> int:
        return self.estimation.tokens_for(text)

    def _content_estimation(self) -> Estimator:
        """For pieces of a message (summarizer input, summary cap): no glue."""
        if self.calibrator is None:
            return self._estimation
        return CalibratedEstimation(self.calibrator.chars_per_token)

    def _reply(self, turn: _Turn) -> int:
        """What a reply adds when it is written: DESIGN.md's tokens_for, or
        calibrated, its content only (the backend's completion count when
        reported); its glue comes with the next message (calibration.py)."""
        if self.calibrator is None:
            return self._tokens(turn.assistant)
        if turn.reply_tokens is not None and turn.assistant:
            return turn.reply_tokens
        return self.calibrator.estimation.content_tokens(turn.assistant)

    def _est(self, turn: _Turn) -> int:
        """A turn's share of the prompt: what folding it away takes out."""
        est = self._tokens(turn.user) + self._reply(turn)
        if self.calibrator is not None and turn.assistant:
            est += math.ceil(self.calibrator.per_reply_tokens)
        return est

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
        self._remember_prompt(messages)
        return messages

    def _remember_prompt(self, messages: list[MemMessage]) -> None:
        if self.calibrator is not None:
            replies = [t.reply_tokens for t in self._turns if t.assistant]
            self._last_prompt = PromptShape.of(messages, replies)

    # -- turns -------------------------------------------------------------

    async def sync_turn(self, user: str, assistant: str, metrics: TurnMetrics) -> None:
        usage = metrics.usage
        turn = _Turn(user, assistant, usage.output_tokens if usage is not None else None)
        self._turns.append(turn)
        self._total_turns += 1
        if usage is not None:
            if self.calibrator is not None and self._last_prompt is not None:
                self.calibrator.observe_prompt(self._last_prompt, usage.input_tokens)
                self._last_prompt = None
            self._anchor = usage.input_tokens
            self._delta = self._reply(turn)  # the reply is not in that report yet
        else:
            self._delta += self._est(turn)
        await self._prune(limit=self.budget, keep=1)

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
        after the turn it precedes in the working set.
        """
        ceiling = self.budget if limit is None else limit
        await self._prune(limit=ceiling, keep=0, required=required_tokens)
        return self.used + required_tokens <= ceiling

    # -- pruning -----------------------------------------------------------

    def _oldest_to_remove(self, *, limit: int, keep: int, required: int, force: bool) -> int:
        """How many of the oldest turns must go for `used + required <= limit`."""
        used = self.used
        if not force and used + required <= limit:
            return 0
        if self._record is None:
            # The first fold adds a record: plan with at least the fallback
            # one's size so one round usually suffices.
            used += self._tokens(format_record(fallback_summary(None, 2)))
        n = 0
        while len(self._turns) - n > keep and (force or used + required > limit):
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
    ) -> bool:
        """Fold oldest turns into the record until the target is met.

        Plans without mutating, awaits the summarizer, then applies: a
        cancelled summary leaves the working set as it was. Repeats when the
        new record itself pushed `used` back over (it is capped at a quarter
        of the budget, so this ends).
        """
        folded = False
        while True:
            n = self._oldest_to_remove(limit=limit, keep=keep, required=required, force=force)
            if n == 0:
                return folded
            removed = self._turns[:n]
            summary = await self._summarize(removed, focus)
            self._apply(n, summary)
            folded, force = True, False

    def _apply(self, n: int, summary: str) -> None:
        removed, self._turns = self._turns[:n], self._turns[n:]
        record = format_record(summary)
        if self._anchor is not None:
            self._delta -= sum(self._est(t) for t in removed)
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

    async def _summarize(self, removed: Sequence[_Turn], focus: str | None) -> str:
        previous = record_summary(self._record) if self._record is not None else None
        pairs = [(t.user, t.assistant) for t in removed]
        fallback = fallback_summary(previous, message_count(pairs))
        if self.summarizer is None:
            return fallback
        extracted = ""
        try:
            extracted = await self.on_pre_compress(_as_messages(removed))
        except Exception:
            logger.warning("on_pre_compress failed; summarizing without it", exc_info=True)
        try:
            messages = summarizer_input(
                asset_text(COMPACTION_PROMPT_ASSET),
                previous,
                pairs,
                cap_tokens=int(self.budget * SUMMARIZER_INPUT_SHARE),
                est=self._content_estimation(),
                focus=focus,
                extracted=extracted,
            )
            summary = (await self.summarizer(messages)).strip()
        except Exception:
            # A failed summary must never lose the turn or break the loop.
            logger.warning("compaction summary failed; using the fallback", exc_info=True)
            return fallback
        if not summary:
            return fallback
        return cap_summary(summary, self._record_cap(), self._content_estimation())

    # -- restore -----------------------------------------------------------

    def restore_turns(self, turns: Sequence[ConversationTurn]) -> None:
        """Rebuild the working set and fullness from the durable log (section 3).

        Synchronous, so it never calls the summarizer: when the log needs
        pruning (a crash between a turn and its record), the oldest turns are
        folded into the record with the fallback line (the previous summary
        is kept above it) and the record is left pending, so the caller's next
        take_compaction_record() persists it.
        """
        self.reset()
        last = max((i for i, t in enumerate(turns) if t.is_compaction), default=None)
        ordinary = [t for t in turns if not t.is_compaction]
        self._total_turns = len(ordinary)
        self._compactions = sum(1 for t in turns if t.is_compaction)
        if last is None:
            before: list[ConversationTurn] = []
            after = ordinary
        else:
            record = turns[last]
            self._record = record.user
            before = [t for t in turns[:last] if not t.is_compaction]
            keep = max(0, record.resident_turns or 0)
            before = before[max(0, len(before) - keep) :] if keep else []
            after = list(turns[last + 1 :])
        self._turns = [
            _Turn(t.user, t.assistant, t.tokens_out if t.tokens_in is not None else None)
            for t in (*before, *after)
        ]

        reported = max((i for i, t in enumerate(after) if t.tokens_in is not None), default=None)
        if reported is not None:
            anchor_turn = after[reported]
            assert anchor_turn.tokens_in is not None
            self._anchor = anchor_turn.tokens_in
            resident_after = self._turns[len(before) :]
            self._delta = self._reply(resident_after[reported]) + sum(
                self._est(t) for t in resident_after[reported + 1 :]
            )
        elif last is not None and turns[last].used_after is not None:
            self._anchor = turns[last].used_after
            self._delta = sum(self._est(t) for t in self._turns[len(before) :])
        self._restore_prune()

    def _restore_prune(self) -> None:
        while n := self._oldest_to_remove(limit=self.budget, keep=1, required=0, force=False):
            removed = self._turns[:n]
            previous = record_summary(self._record) if self._record is not None else None
            count = message_count([(t.user, t.assistant) for t in removed])
            self._apply(n, fallback_summary(previous, count))


def _as_messages(turns: Sequence[_Turn]) -> list[MemMessage]:
    out: list[MemMessage] = []
    for t in turns:
        out.append(MemMessage("user", t.user))
        if t.assistant:
            out.append(MemMessage("assistant", t.assistant))
    return out
