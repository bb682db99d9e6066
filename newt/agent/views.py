"""What the UI renders, as the agent layer hands it out.

The UI imports this module (and newt.agent's events and session protocol),
never the store, recall or memory packages: those can change shape without
the screens noticing. Rows from the store satisfy the protocols below as
they are; history entries are built here so the UI never parses a
compaction record itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from newt.agent.attachments import attachment_names, typed_prompt
from newt.agent.memory_status import MemoryStatus
from newt.agent.reply_stats import ReplyStats
from newt.memory.compaction import record_summary
from newt.recall import EvidenceCapsule, RetentionReport
from newt.store import StoreError, make_title
from newt.store.models import StoredTurn
from newt.text import strip_terminal_escapes


class ConversationView(Protocol):
    """A saved conversation as lists and headers show it."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def updated_at(self) -> float: ...
    @property
    def turn_count(self) -> int: ...


class RecordView(Protocol):
    """A memory record shown in full (opened from an evidence capsule)."""

    @property
    def key(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def created_at(self) -> float: ...


@dataclass
class HistoryEntry:
    """One row of a conversation's durable log, ready to show."""

    id: int
    kind: str  # "turn" | "compaction"
    status: str  # "complete" | "interrupted" | "pending" | "failed"
    user: str
    assistant: str = ""
    tool_events: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    resident_turns: int | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    used_after: int | None = None
    created_at: float = 0.0
    summary: str = ""
    """For a compaction record: its summary without the marker boilerplate."""
    thinking: str = ""
    """The model's reasoning, shown collapsed above the answer."""
    stats: ReplyStats | None = None
    """The reply's footer figures (tokens, speed), where known."""
    attached: list[str] = field(default_factory=list)
    """Names of the files the prompt attached (`user` is the prompt as typed)."""


def history_entries(turns: Iterable[StoredTurn]) -> list[HistoryEntry]:
    return [
        HistoryEntry(
            id=t.id,
            kind=t.kind,
            status=t.status,
            user=typed_prompt(t.user, t.attachments),
            assistant=t.assistant,
            tool_events=list(t.tool_events),
            error=t.error,
            resident_turns=t.resident_turns,
            tokens_in=t.tokens_in,
            tokens_out=t.tokens_out,
            used_after=t.used_after,
            created_at=t.created_at,
            summary=record_summary(t.user) if t.kind == "compaction" else "",
            thinking=t.thinking,
            stats=ReplyStats.of_turn(t) if t.kind == "turn" else None,
            attached=attachment_names(t.attachments),
        )
        for t in turns
    ]


def compaction_summary(record: str) -> str:
    """The summary body of a compaction record, without the marker boilerplate."""
    return record_summary(record)


__all__ = [
    "ConversationView",
    "EvidenceCapsule",
    "HistoryEntry",
    "MemoryStatus",
    "RecordView",
    "ReplyStats",
    "RetentionReport",
    "StoreError",
    "compaction_summary",
    "history_entries",
    "make_title",
    "strip_terminal_escapes",
]
