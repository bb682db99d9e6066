"""Learning the token estimate from the backend's own reports.

DESIGN.md's `TokenEstimation` divides characters by a fixed ratio. Measured
against llama-server (benchmarks/fullness_accuracy.py) that is not enough to
keep the anchored fullness within a few percent: the same model spends 2 chars
per token on JSON and 5 on English prose, and a chat template can add a dozen
tokens per message. The anchoring rule stays as it is; only the estimate of
what was added or removed since the last report gets better:

- `CalibratedEstimation` counts *pieces* (letter runs, single digits,
  punctuation marks, line breaks and indentation) instead of characters, since
  BPE/SentencePiece tokenizers split on exactly those boundaries, and scales
  them by a learned ratio. One piece counts as PIECE_CHARS characters, so the
  ratio stays in the familiar unit (about 4 on English prose) and is what the
  capability cache's `chars_per_token` column stores. A learned
  `per_message_tokens` adds the chat template's cost of each message.
- `Calibrator` fits both numbers by weighted least squares to the backend's
  reports: each request's prompt_tokens against the pieces and the number of
  messages of the prompt, each reply's completion_tokens against its pieces.
  Old observations fade (FORGET) so the fit follows the conversation, and a
  weak prior keeps the first estimates sane.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from newt.memory.types import Estimator

PIECE_CHARS = 4.0
_PIECE = re.compile(r"[^\W\d_]+|\d|\s+|[^\w\s]")
# Weights of the units below, fitted by least squares to llama-server's
# /tokenize counts of prose, code, JSON and accented text (mean error 4-5 %
# per message against 25 % for plain characters), then rounded. They only
# shape the estimate; the learned ratio scales it to each model.
_W_WORD = 1.0  # an ASCII letter run is about one token whatever its length
_W_FOREIGN_WORD, _W_FOREIGN_LETTER = 1.0, 0.125  # non-ASCII runs split more
_W_DIGIT = 0.75
_W_PUNCT = 0.875
_W_NEWLINE = 0.75
_W_INDENT = 0.7  # per whitespace character beyond a single space
FORGET = 0.95
DEFAULT_PER_MESSAGE_TOKENS = 4.0  # OpenAI's documented chat overhead is 3-4
MIN_CHARS_PER_TOKEN, MAX_CHARS_PER_TOKEN = 0.5, 16.0
MAX_PER_MESSAGE_TOKENS = 64.0


@lru_cache(maxsize=4096)
def pieces(text: str) -> float:
    """Tokenizer-shaped size of `text`: letter runs, digits, punctuation, line
    breaks and indentation weighted by what they usually cost in tokens."""
    n = 0.0
    for m in _PIECE.finditer(text):
        s = m.group()
        first = s[0]
        if first.isalpha():
            n += _W_WORD if s.isascii() else _W_FOREIGN_WORD + _W_FOREIGN_LETTER * len(s)
        elif first.isdigit():
            n += _W_DIGIT
        elif first.isspace():
            newlines = s.count("\n")
            spaces = len(s) - newlines
            n += _W_NEWLINE * newlines + (_W_INDENT * (spaces - 1) if spaces > 1 else 0.0)
        else:
            n += _W_PUNCT
    return n


@dataclass(frozen=True)
class CalibratedEstimation:
    chars_per_token: float = 4.0  # in pieces x PIECE_CHARS per token
    per_message_tokens: float = 0.0

    def tokens_for(self, text: str) -> int:
        if not text:
            return 0  # an empty message is not sent (build_messages skips it)
        ratio = min(max(self.chars_per_token, MIN_CHARS_PER_TOKEN), MAX_CHARS_PER_TOKEN)
        return math.ceil(pieces(text) * PIECE_CHARS / ratio + self.per_message_tokens)

    def measured(self, content_tokens: int) -> int:
        """A message whose content the backend counted (a reply's completion_tokens)."""
        return math.ceil(content_tokens + self.per_message_tokens)


class Calibrator:
    """Fits `tokens ~ a * pieces + b * messages` with a = PIECE_CHARS / ratio."""

    def __init__(
        self,
        chars_per_token: float = 4.0,
        per_message_tokens: float = DEFAULT_PER_MESSAGE_TOKENS,
    ) -> None:
        a0 = PIECE_CHARS / min(max(chars_per_token, MIN_CHARS_PER_TOKEN), MAX_CHARS_PER_TOKEN)
        # Normal equations of the weighted fit, seeded with two weak pseudo
        # observations: 250 pieces at the prior ratio, one message at the prior
        # overhead.
        self._sxx = [[0.0, 0.0], [0.0, 0.0]]
        self._sxy = [0.0, 0.0]
        self._prior = ((250.0, 0.0, 250.0 * a0), (0.0, 1.0, per_message_tokens))
        self.observations = 0
        self.estimation = CalibratedEstimation(chars_per_token, per_message_tokens)

    @classmethod
    def from_estimation(cls, est: Estimator) -> Calibrator:
        return cls(float(est.chars_per_token))

    @property
    def chars_per_token(self) -> float:
        """The learned ratio (what the capability cache persists)."""
        return self.estimation.chars_per_token

    @property
    def per_message_tokens(self) -> float:
        return self.estimation.per_message_tokens

    def observe(self, n_pieces: float, messages: float, tokens: int) -> None:
        """One report: `tokens` backend tokens for that many pieces and messages."""
        if tokens <= 0 or n_pieces < 0:
            return
        for row in self._sxx:
            row[0] *= FORGET
            row[1] *= FORGET
        self._sxy = [v * FORGET for v in self._sxy]
        self._add(n_pieces, messages, float(tokens))
        self.observations += 1
        self._solve()

    def observe_turn(
        self,
        prompt: Sequence[str] | None,
        prompt_tokens: int,
        reply: str,
        reply_tokens: int,
    ) -> None:
        """A turn's usage report: the prompt as sent (message contents) and the reply.

        The reply has no template overhead; the prompt has one per message plus
        the assistant header that opens the reply (counted as one more).
        """
        if prompt:
            self.observe(sum(pieces(c) for c in prompt), len(prompt) + 1, prompt_tokens)
        if reply:
            self.observe(pieces(reply), 0, reply_tokens)

    def _add(self, x1: float, x2: float, y: float, weight: float | None = None) -> None:
        # Relative weighting: a 2,000-token prompt should not drown a reply.
        w = weight if weight is not None else 1.0 / max(y, 1.0)
        self._sxx[0][0] += w * x1 * x1
        self._sxx[0][1] += w * x1 * x2
        self._sxx[1][1] += w * x2 * x2
        self._sxy[0] += w * x1 * y
        self._sxy[1] += w * x2 * y

    def _solve(self) -> None:
        s = [row[:] for row in self._sxx]
        sy = self._sxy[:]
        for x1, x2, y in self._prior:
            w = 1.0 / max(y, 1.0)
            s[0][0] += w * x1 * x1
            s[0][1] += w * x1 * x2
            s[1][1] += w * x2 * x2
            sy[0] += w * x1 * y
            sy[1] += w * x2 * y
        det = s[0][0] * s[1][1] - s[0][1] ** 2
        if det <= 0:
            return
        a = (sy[0] * s[1][1] - sy[1] * s[0][1]) / det
        b = (s[0][0] * sy[1] - s[0][1] * sy[0]) / det
        if a <= 0:
            return
        ratio = min(max(PIECE_CHARS / a, MIN_CHARS_PER_TOKEN), MAX_CHARS_PER_TOKEN)
        self.estimation = CalibratedEstimation(ratio, min(max(b, 0.0), MAX_PER_MESSAGE_TOKENS))
