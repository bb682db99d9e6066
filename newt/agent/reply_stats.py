"""Token counts and speed of one reply, and the sum over a conversation.

A reply's footer shows the backend's own usage report for the request that
produced it: prompt tokens (the whole prompt, recall capsules and tool
schemas included), completion tokens (reasoning included, as servers count
them) and completion tokens per second from the first streamed token to the
last. A backend that sends no usage gets newt's estimate, marked as one.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from newt.store import ReplyDetails, StoredTurn


@dataclass
class ReplyClock:
    """Streaming time of a reply: first to last token of each request, summed
    (time spent running tools between rounds is not generation)."""

    seconds: float = 0.0
    _first: float | None = None
    _last: float | None = None

    def tick(self) -> None:
        now = time.monotonic()
        if self._first is None:
            self._first = now
        self._last = now

    def end_round(self) -> None:
        if self._first is not None and self._last is not None:
            self.seconds += self._last - self._first
        self._first = self._last = None


@dataclass(frozen=True)
class ReplyStats:
    prompt_tokens: int | None
    completion_tokens: int | None
    seconds: float | None
    estimated: bool = False
    """The counts are newt's estimate: the backend reported no usage."""
    stopped_for_length: bool = False
    """The backend stopped the reply at its length cap (finish_reason "length"):
    the footer says so, since the text alone looks like a whole reply. Stored
    with the turn (migration 15), so a resumed conversation's footer says it too."""
    first_token_s: float | None = None
    """The wait for the first token (a slow local model reading its prompt); live
    only (not stored)."""
    cached_tokens: int | None = None
    """Prompt tokens the server read from its cache, as it reported them
    (OpenAI's cached_tokens, llama-server's cache_n); live only."""

    @property
    def tokens_per_second(self) -> float | None:
        if not self.seconds or not self.completion_tokens or self.seconds < 0.001:
            return None
        return self.completion_tokens / self.seconds

    def details(self, thinking: str) -> ReplyDetails:
        return ReplyDetails(
            thinking=thinking,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            reply_seconds=self.seconds,
            tokens_estimated=self.estimated,
            stopped_for_length=self.stopped_for_length,
        )

    @classmethod
    def of_turn(cls, turn: StoredTurn) -> ReplyStats | None:
        """What a stored turn's footer shows; turns stored before migration 7
        fall back to the memory's figures (reported, capsules not counted)."""
        if turn.prompt_tokens is not None or turn.completion_tokens is not None:
            return cls(
                turn.prompt_tokens,
                turn.completion_tokens,
                turn.reply_seconds,
                turn.tokens_estimated,
                stopped_for_length=turn.stopped_for_length,
            )
        if turn.tokens_in is not None:
            return cls(turn.tokens_in, turn.tokens_out, None)
        return None


def answer_share(completion_tokens: int, answer: str, thinking: str) -> int:
    """Of a reply's completion tokens, those of the answer alone.

    The memory counts what goes back to the model, and the reasoning never
    does; servers count it in completion_tokens, so it is taken out in
    proportion to its characters."""
    if not thinking:
        return completion_tokens
    total = len(answer) + len(thinking)
    return round(completion_tokens * len(answer) / total) if total else completion_tokens


@dataclass
class TokenTally:
    """Prompt and completion tokens summed over a conversation's replies."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    replies: int = 0
    estimated: int = 0
    """How many of the replies counted carry estimates, not the backend's report."""
    cached_tokens: int = 0
    """Prompt tokens the server said it read from its cache, over this session's
    replies (the count is not stored with a turn)."""
    _seen: set[int] = field(default_factory=set, repr=False)

    def reset(self, turns: Iterable[StoredTurn] = ()) -> None:
        self.prompt_tokens = self.completion_tokens = self.replies = self.estimated = 0
        self.cached_tokens = 0
        self._seen = set()
        for turn in turns:
            if turn.kind == "turn":
                self.add(turn.id, ReplyStats.of_turn(turn))

    def add(self, turn_id: int, stats: ReplyStats | None) -> None:
        if stats is None or turn_id in self._seen:
            return
        self._seen.add(turn_id)
        self.prompt_tokens += stats.prompt_tokens or 0
        self.completion_tokens += stats.completion_tokens or 0
        self.replies += 1
        self.estimated += int(stats.estimated)
        self.cached_tokens += stats.cached_tokens or 0
