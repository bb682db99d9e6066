"""Learning the token estimate from the backend's own reports.

The plain `TokenEstimation` divides characters by a fixed ratio. Measured
against llama-server (benchmarks/fullness_accuracy.py) that keeps the anchored
fullness only within ~20 %: the same model spends 2 chars per token on JSON
and 5 on English prose, and its chat template adds ~15 tokens of glue per
message. The anchoring rule stays as it is; only the estimate of what was added
or removed since the last report gets better:

- `CalibratedEstimation` counts *pieces* (letter runs, single digits,
  punctuation marks, line breaks and indentation) instead of characters, since
  BPE/SentencePiece tokenizers split on exactly those boundaries, and scales
  them by a learned ratio. One piece counts as PIECE_CHARS characters, so the
  ratio stays in the familiar unit (about 4 on English prose) and is what the
  capability cache's `chars_per_token` column stores.
- Template glue (role headers, end-of-message markers) is learned per
  message: `per_message_tokens` for prompt-side messages (system, user,
  compaction record), `per_reply_tokens` for a reply in the history. A reply
  the backend just wrote adds its content only (its completion_tokens): the
  request that produced it already carried its header, and its closing
  marker arrives with the next message. So fullness right after a reply is
  the reported prompt plus completion_tokens, and a turn folded away later
  takes its user message, its reply and both glues with it.
- `Calibrator` fits ratio and both glues by weighted least squares to the
  change of prompt_tokens (minus the reported replies) between consecutive
  requests, against the change of pieces, of prompt-side messages and of
  replies. Old observations fade (FORGET) so the fit follows the
  conversation, a weak prior keeps the first estimates sane, and an
  observation far off the current fit (a request that carried tool results
  or recall capsules) is ignored.

The ratio and both glues are persisted (the capability cache) and seed the
next session, as a point: what the fit has seen is not, so a process that
sees one report (`newt -c -p`) learns from one whole prompt. A restore is
exact whatever the fit when the turns after the last compaction record carry
usage: a reported reply costs its completion_tokens, which the durable log
keeps.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from newt.memory.types import Estimator, MemMessage

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
# Glue per message: OpenAI documents 3-4 tokens; ChatML written out in plain
# tokens (Gemma 3 270M on llama-server) measured about 15.
DEFAULT_PER_MESSAGE_TOKENS = 4.0
OUTLIER = 0.5  # ignore an observation this far (relative) from the fit...
OUTLIER_AFTER = 3  # ...once this many observations shaped it
MIN_WEIGHT_TOKENS = 16.0  # a tiny or negative change weighs like a 16-token one
PRIOR_WEIGHT_TOKENS = 400.0  # each prior weighs less than one real turn
MIN_CHARS_PER_TOKEN, MAX_CHARS_PER_TOKEN = 0.5, 16.0
MAX_PER_MESSAGE_TOKENS = 64.0


_LETTER_RUN = re.compile(r"[^\W\d_]+")
_PUNCT = re.compile(r"[^\w\s]")
_LONG_SPACE = re.compile(r"\s{2,}")  # maximal whitespace runs that can hold indentation
_DIGITS = "0123456789"


@lru_cache(maxsize=4096)
def pieces(text: str) -> float:
    """Tokenizer-shaped size of `text`: letter runs, digits, punctuation, line
    breaks and indentation weighted by what they usually cost in tokens."""
    if text.isascii():
        return _ascii_pieces(text)
    return _pieces_by_match(text)


def _ascii_pieces(text: str) -> float:
    """`_pieces_by_match` for ASCII text, counted by the regex engine and
    str.count instead of a Python step per match: ~5x faster (a 32,000-character
    reply took ~10 ms the slow way, at the end of a turn, on the event loop).
    In ASCII every letter run is one word and every digit a `\\d`."""
    words = len(_LETTER_RUN.findall(text))
    digits = sum(text.count(d) for d in _DIGITS)
    punct = len(_PUNCT.findall(text))
    newlines = text.count("\n")
    indent = 0.0
    for run in _LONG_SPACE.findall(text):
        spaces = len(run) - run.count("\n")
        if spaces > 1:
            indent += _W_INDENT * (spaces - 1)
    return _W_WORD * words + _W_DIGIT * digits + _W_PUNCT * punct + _W_NEWLINE * newlines + indent


def _pieces_by_match(text: str) -> float:
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
    per_message_tokens: float = 0.0  # glue of a prompt-side message
    per_reply_tokens: float = 0.0  # glue of a reply in the history

    def _scale(self) -> float:
        ratio = min(max(self.chars_per_token, MIN_CHARS_PER_TOKEN), MAX_CHARS_PER_TOKEN)
        return PIECE_CHARS / ratio

    def content_tokens(self, text: str) -> int:
        """A text's own tokens, without glue."""
        return math.ceil(pieces(text) * self._scale()) if text else 0

    def tokens_for(self, text: str) -> int:
        """A prompt-side message: its content plus its glue."""
        if not text:
            return 0  # an empty message is not sent (build_messages skips it)
        return math.ceil(pieces(text) * self._scale() + self.per_message_tokens)


# The same estimate at its prior, learned from nothing: the unit the evidence
# budget and its packing are counted in, so that a conversation gets the same
# block in every front end and at every point (the learned fit moves with what
# each process has seen; the guard before sending counts with it).
STEADY = CalibratedEstimation(PIECE_CHARS, DEFAULT_PER_MESSAGE_TOKENS, DEFAULT_PER_MESSAGE_TOKENS)


@dataclass(frozen=True)
class PromptShape:
    """What calibration needs to know of one prompt as sent."""

    pieces: float  # in prompt-side messages and replies without a reported count
    prompt_side: int  # system, user and record messages
    replies: int  # assistant messages
    reported: int  # completion_tokens of the replies it carries, where known

    @classmethod
    def of(cls, messages: Sequence[MemMessage], reply_tokens: Sequence[int | None]) -> PromptShape:
        """`reply_tokens`: each assistant message's reported count, in order."""
        counts = iter(reply_tokens)
        n_pieces, prompt_side, replies, reported = 0.0, 0, 0, 0
        for m in messages:
            if m.role != "assistant":
                n_pieces += pieces(m.content)
                prompt_side += 1
                continue
            replies += 1
            count = next(counts, None)
            if count is None:
                n_pieces += pieces(m.content)
            else:
                reported += count
        return cls(n_pieces, prompt_side, replies, reported)


class _Row(NamedTuple):
    x: tuple[float, float, float]  # pieces, prompt-side messages, replies
    y: float  # tokens
    w: float  # weight


def _solve3(a: list[list[float]], b: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None if singular."""
    m = [[*row, rhs] for row, rhs in zip(a, b, strict=True)]
    for col in range(3):
        pivot = max(range(col, 3), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-12:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(col + 1, 3):
            f = m[r][col] / m[col][col]
            for c in range(col, 4):
                m[r][c] -= f * m[col][c]
    out = [0.0, 0.0, 0.0]
    for r in (2, 1, 0):
        out[r] = (m[r][3] - sum(m[r][c] * out[c] for c in range(r + 1, 3))) / m[r][r]
    return out


class Calibrator:
    """Fits `tokens ~ a * pieces + g * prompt_side + h * replies`, where
    a = PIECE_CHARS / chars_per_token, g = per_message_tokens and
    h = per_reply_tokens."""

    def __init__(
        self,
        chars_per_token: float = 4.0,
        per_message_tokens: float = DEFAULT_PER_MESSAGE_TOKENS,
        per_reply_tokens: float = DEFAULT_PER_MESSAGE_TOKENS,
    ) -> None:
        chars_per_token = min(max(chars_per_token, MIN_CHARS_PER_TOKEN), MAX_CHARS_PER_TOKEN)
        a0 = PIECE_CHARS / chars_per_token
        # Sums of the weighted normal equations (X'WX, X'Wy). The prior is
        # three light pseudo observations that never fade: 100 pieces at the
        # prior ratio, one message and one reply at the prior glue. Real
        # reports outweigh them from the first; they keep an early fit sane.
        self._xtx = [[0.0] * 3 for _ in range(3)]
        self._xty = [0.0] * 3
        prior_w = 1.0 / PRIOR_WEIGHT_TOKENS
        self._prior = (
            _Row((100.0, 0.0, 0.0), 100.0 * a0, prior_w),
            _Row((0.0, 1.0, 0.0), per_message_tokens, prior_w),
            _Row((0.0, 0.0, 1.0), per_reply_tokens, prior_w),
        )
        self.observations = 0
        self.estimation = CalibratedEstimation(
            chars_per_token, per_message_tokens, per_reply_tokens
        )
        self._previous: tuple[PromptShape, int] | None = None

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

    @property
    def per_reply_tokens(self) -> float:
        return self.estimation.per_reply_tokens

    def new_conversation(self) -> None:
        """Forget the previous prompt (what is learned stays: it is per model)."""
        self._previous = None

    def observe_prompt(self, shape: PromptShape, prompt_tokens: int) -> None:
        """A usage report for a prompt of `shape`.

        Fed as the change since the previous report: consecutive prompts share
        most of their content, and what changed (a reply and a user message, a
        fold) varies in size and kind from turn to turn, which pins the ratio
        and the glue apart; whole prompts, whose size and message count grow
        together, cannot. The first report of a conversation goes in whole.
        """
        tokens = prompt_tokens - shape.reported
        if self._previous is None:
            self.observe(shape.pieces, shape.prompt_side, shape.replies, tokens)
        else:
            before, before_tokens = self._previous
            self.observe(
                shape.pieces - before.pieces,
                shape.prompt_side - before.prompt_side,
                shape.replies - before.replies,
                tokens - before_tokens,
            )
        self._previous = (shape, tokens)

    def observe(self, n_pieces: float, prompt_side: int, replies: int, tokens: int) -> bool:
        """`tokens` backend tokens for that many pieces, prompt-side messages
        and replies: a whole prompt, or (signed) the change between two.
        Returns False when the observation was ignored."""
        x = (float(n_pieces), float(prompt_side), float(replies))
        if x == (0.0, 0.0, 0.0):
            return False
        if self.observations >= OUTLIER_AFTER:
            e = self.estimation
            predicted = x[0] * e._scale() + x[1] * e.per_message_tokens + x[2] * e.per_reply_tokens
            if abs(predicted - tokens) > OUTLIER * max(abs(tokens), MIN_WEIGHT_TOKENS):
                return False
        for row in self._xtx:
            row[:] = [v * FORGET for v in row]
        self._xty = [v * FORGET for v in self._xty]
        # Relative weighting: a long prompt must not drown the short changes.
        self._add(
            self._xtx, self._xty, _Row(x, float(tokens), 1 / max(abs(tokens), MIN_WEIGHT_TOKENS))
        )
        self.observations += 1
        self._solve()
        return True

    @staticmethod
    def _add(xtx: list[list[float]], xty: list[float], row: _Row) -> None:
        for i in range(3):
            xty[i] += row.w * row.x[i] * row.y
            for j in range(3):
                xtx[i][j] += row.w * row.x[i] * row.x[j]

    def _solve(self) -> None:
        xtx = [r[:] for r in self._xtx]
        xty = self._xty[:]
        for row in self._prior:
            self._add(xtx, xty, row)
        fit = _solve3(xtx, xty)
        if fit is None or fit[0] <= 0:
            return
        a, g, h = fit
        ratio = min(max(PIECE_CHARS / a, MIN_CHARS_PER_TOKEN), MAX_CHARS_PER_TOKEN)
        self.estimation = CalibratedEstimation(
            ratio,
            min(max(g, 0.0), MAX_PER_MESSAGE_TOKENS),
            min(max(h, 0.0), MAX_PER_MESSAGE_TOKENS),
        )
