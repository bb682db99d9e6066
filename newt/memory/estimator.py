"""The token estimate TokenBudget uses between backend reports, in one place.

Two modes, chosen here and nowhere else:

- **plain**: every text costs `tokens_for(text)` of the
  configured `TokenEstimation` (chars / chars_per_token); a turn costs its
  user text plus its reply.
- **calibrated** (calibration.py): the estimate is learned from the backend's
  own usage reports; prompt-side messages carry template glue, a reply the
  backend measured costs its completion_tokens, and a reply in the history
  adds its own glue.

TokenBudget asks the questions below (what does this message cost, what does
folding this turn take out, what did a report teach us) and never looks at
which mode answers them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from newt.memory.calibration import CalibratedEstimation, Calibrator, PromptShape
from newt.memory.types import Estimator, MemMessage, TokenEstimation


class TurnEstimator:
    def __init__(self, plain: Estimator | None = None) -> None:
        self.plain: Estimator = plain or TokenEstimation()
        self.calibrator: Calibrator | None = None
        self._last_prompt: PromptShape | None = None

    # -- choosing the mode -------------------------------------------------

    def calibrate(self, calibrator: Calibrator | None = None) -> None:
        """Learn from reports from now on, seeded with `calibrator` (or the plain ratio)."""
        self.calibrator = calibrator or Calibrator.from_estimation(self.plain)

    def seed(
        self, ratio: float, per_message: float | None = None, per_reply: float | None = None
    ) -> None:
        """Calibrate from figures learned earlier for this model (the capability
        cache's `chars_per_token` and template glue)."""
        glue = {
            k: float(v)
            for k, v in (("per_message_tokens", per_message), ("per_reply_tokens", per_reply))
            if v is not None
        }
        self.calibrate(Calibrator(float(ratio), **glue))

    @property
    def estimation(self) -> Estimator:
        """The estimate in force: the calibrator's latest fit when calibrating."""
        return self.calibrator.estimation if self.calibrator is not None else self.plain

    @property
    def learned(self) -> tuple[float, float, float] | None:
        """(chars_per_token, per_message, per_reply) once a report shaped them."""
        cal = self.calibrator
        if cal is None or cal.observations == 0:
            return None
        return cal.chars_per_token, cal.per_message_tokens, cal.per_reply_tokens

    # -- what things cost --------------------------------------------------

    def message(self, text: str) -> int:
        """A prompt-side message (user text, system prompt, compaction record)."""
        return self.estimation.tokens_for(text)

    def content(self) -> Estimator:
        """For pieces of a message (summarizer input, the summary cap): no glue."""
        if self.calibrator is None:
            return self.plain
        return CalibratedEstimation(self.calibrator.chars_per_token)

    def reply(self, assistant: str, reported: int | None) -> int:
        """What a reply adds when it is written. Calibrated: its content only
        (the backend's completion count when reported); its glue comes with
        the next message (calibration.py)."""
        if self.calibrator is None:
            return self.message(assistant)
        if reported is not None and assistant:
            return reported
        return self.calibrator.estimation.content_tokens(assistant)

    def turn(self, user: str, assistant: str, reported: int | None) -> int:
        """A turn's share of the prompt: what folding it away takes out."""
        est = self.message(user) + self.reply(assistant, reported)
        if self.calibrator is not None and assistant:
            est += math.ceil(self.calibrator.per_reply_tokens)
        return est

    # -- learning ----------------------------------------------------------

    def remember_prompt(
        self, messages: Sequence[MemMessage], replies: Sequence[int | None]
    ) -> None:
        """The prompt just built, to pair with the next usage report."""
        if self.calibrator is not None:
            self._last_prompt = PromptShape.of(messages, replies)

    def observe_report(self, prompt_tokens: int) -> None:
        if self.calibrator is not None and self._last_prompt is not None:
            self.calibrator.observe_prompt(self._last_prompt, prompt_tokens)
        self._last_prompt = None

    def new_conversation(self) -> None:
        self._last_prompt = None
        if self.calibrator is not None:
            self.calibrator.new_conversation()
