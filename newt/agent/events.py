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
    | ToolCallStarted
    | ToolCallFinished
    | UsageReported
    | Compacted
    | RetainedEvidence
    | Notice
    | TurnError
    | TurnDone
)
