"""Plain events one user turn emits; the TUI and print mode both consume them.

No textual here: the UI turns these into widget updates, print mode into
stdout/stderr writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from newt.agent.reply_stats import ReplyStats
from newt.recall import RetentionReport


@dataclass
class TurnStarted:
    """The user's message is persisted (pending) and the request is about to go out."""

    turn_id: int
    user: str


@dataclass
class TextDelta:
    text: str


@dataclass
class ThinkingDelta:
    """A piece of the model's reasoning: shown apart, stored, never sent back."""

    text: str


@dataclass
class ReplyPace:
    """How a request is going, for the streaming reply's status line: a slow local
    model reads a long prompt for seconds before its first token.

    Before the first token: the prompt tokens to read (the server's count less
    what it had cached, or newt's estimate), how many it has read when the
    server says (llama-server's prompt progress), and the time left (from the
    server's own pace, else from the rate measured on an earlier request).
    After it: the time to the first token and the reply's pace (pieces
    streamed a second, which for llama-server are tokens)."""

    waited_s: float
    prompt_tokens: int | None = None
    read_tokens: int | None = None
    left_s: float | None = None
    first_token_s: float | None = None
    tokens: int = 0
    per_s: float | None = None


@dataclass
class ToolCallStarted:
    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class ToolCallFinished:
    call_id: str
    name: str
    result: str
    error: bool = False


@dataclass
class UsageReported:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None = None


@dataclass
class Compacted:
    """The provider folded old turns into its compaction record (already persisted)."""

    record: str
    resident_turns: int
    used_after: int
    reason: str = "budget"  # "budget" | "guard" | "overflow" | "manual"


@dataclass
class RetainedEvidence:
    report: RetentionReport


@dataclass
class Notice:
    """Something the user should know that is not an error (e.g. retrying without tools)."""

    message: str


@dataclass
class TurnError:
    """The turn failed; the user's text is kept (pending/failed turn) for a retry."""

    message: str
    retryable: bool
    kind: str = "error"  # class name of the underlying error


@dataclass
class TurnDone:
    turn_id: int
    reply: str
    status: str  # "complete" | "interrupted" | "failed"
    usage: UsageReported | None = None
    compactions: list[Compacted] = field(default_factory=list)
    thinking: str = ""
    stats: ReplyStats | None = None
    """The reply's footer figures (counts reported or estimated, speed)."""
    finish_reason: str | None = None
    """The backend's finish_reason for the last request: "length" means the
    reply was cut at the reply cap (max_tokens or the server's own)."""


AgentEvent = (
    TurnStarted
    | TextDelta
    | ThinkingDelta
    | ReplyPace
    | ToolCallStarted
    | ToolCallFinished
    | UsageReported
    | Compacted
    | RetainedEvidence
    | Notice
    | TurnError
    | TurnDone
)
