"""The pace of one request, as `ev.ReplyPace` events: the prompt being read, then the reply.

On a two-core machine a local model reads a 1,500-token prompt for about 16 s
before its first token. The llama-server newt runs reports how far it has read
(`PromptProgress`, asked for with ``return_progress``); any other server says
nothing until its first token, so the wait is estimated from the prompt's size
and the reading rate measured on an earlier request of the session. After the
first token the meter reports the time it took and the reply's pace, at most
every PACE_INTERVAL_S.
"""

from __future__ import annotations

import time

from newt.agent import events as ev
from newt.backend.types import PromptProgress

PACE_INTERVAL_S = 0.5
MIN_MEASURED_TOKENS = 100


class PaceMeter:
    def __init__(self, prompt_tokens: int | None, prompt_rate: float | None) -> None:
        """`prompt_tokens`: newt's estimate of what the server must read (None: unknown);
        `prompt_rate`: prompt tokens a second measured earlier (None: not yet)."""
        self.started = time.monotonic()
        self.prompt_tokens = prompt_tokens
        self.rate = prompt_rate
        self.first_token_s: float | None = None
        self.tokens = 0
        self._last_emit = 0.0
        self._read: tuple[int, float] | None = None  # (tokens read, seconds) as reported

    def _waited(self) -> float:
        return time.monotonic() - self.started

    def start(self) -> ev.ReplyPace:
        left = self.prompt_tokens / self.rate if self.prompt_tokens and self.rate else None
        return ev.ReplyPace(0.0, self.prompt_tokens, None, left)

    def progress(self, report: PromptProgress) -> ev.ReplyPace:
        """The server's own report of how far it has read."""
        to_read = max(0, report.total - report.cache)
        read = max(0, min(report.processed - report.cache, to_read))
        seconds = report.time_ms / 1000
        left: float | None = None
        if read > 0 and seconds > 0:
            self._read = read, seconds
            left = (to_read - read) * seconds / read
        elif self.rate:
            left = to_read / self.rate
        self.prompt_tokens = to_read
        return ev.ReplyPace(self._waited(), to_read, read, left)

    def token(self) -> ev.ReplyPace | None:
        """A piece of the reply (or its thinking) arrived; a pace event now and then."""
        now = time.monotonic()
        self.tokens += 1
        if self.first_token_s is None:
            self.first_token_s = now - self.started
            self._last_emit = now
            return ev.ReplyPace(self.first_token_s, first_token_s=self.first_token_s, tokens=1)
        if now - self._last_emit < PACE_INTERVAL_S:
            return None
        self._last_emit = now
        return ev.ReplyPace(
            now - self.started,
            first_token_s=self.first_token_s,
            tokens=self.tokens,
            per_s=self.per_s(now),
        )

    def per_s(self, now: float | None = None) -> float | None:
        if self.first_token_s is None or self.tokens < 2:
            return None
        streaming = (now or time.monotonic()) - self.started - self.first_token_s
        return (self.tokens - 1) / streaming if streaming > 0 else None

    def measured_rate(self, prompt_tokens: int | None, cached: int | None) -> float | None:
        """Prompt tokens read a second on this request: the server's own figures when it
        reported them, else the prompt (less its cache) over the time to the first token."""
        if self._read is not None:
            read, seconds = self._read
            return read / seconds
        if prompt_tokens is None or self.first_token_s is None or self.first_token_s <= 0:
            return None
        fresh = prompt_tokens - (cached or 0)
        # a short prompt's wait is mostly the request itself, not reading
        return fresh / self.first_token_s if fresh >= MIN_MEASURED_TOKENS else None
