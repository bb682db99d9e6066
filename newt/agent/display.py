"""What the UI renders, as the agent layer hands it out.

The UI imports this module (and newt.agent's events and session protocol),
never the store, recall or memory packages: those can change shape without
the screens noticing. Rows from the store satisfy the protocols below as
they are; history entries are built here so the UI never parses a
compaction record itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from newt.agent.own_memory.status import MemoryStatus
from newt.agent.reply_stats import ReplyStats
from newt.agent.turn.attachments import attachment_names, typed_prompt
from newt.memory.compaction import message_count, record_summary, unsummarized_messages
from newt.recall import EvidenceCapsule, RetentionReport
from newt.store import StoreError, make_title
from newt.store.models import StoredTurn
from newt.text import strip_terminal_escapes


class ConversationView(Protocol):
    """A saved conversation as lists and headers show it (a fork names its parent)."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def updated_at(self) -> float: ...
    @property
    def message_count(self) -> int: ...
    @property
    def parent_id(self) -> str | None: ...
    @property
    def parent_title(self) -> str | None: ...


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


_FOLDABLE = ("complete", "interrupted")  # what a working set ever held (memory/restore.py)


@dataclass(frozen=True)
class FoldedTurn:
    """One turn a fold took out of the working set."""

    number: int
    """Its place among the conversation's turns, 1 = the first (as /fork counts)."""
    created_at: float
    user: str
    """The user's words as typed (raw: the UI cleans what it shows)."""


@dataclass(frozen=True)
class FoldView:
    """One compaction row of a conversation, as the chat log, the fold screen
    and /memory show it (docs/design.md section 5)."""

    row_id: int
    created_at: float
    turns: tuple[FoldedTurn, ...]
    """The turns this record folded that no earlier record had."""
    covered: int
    """Turns folded so far, this fold's included."""
    resident_turns: int | None
    summary: str
    """This record's summary text when it was written (raw)."""
    current_summary: str
    """The newest record's summary: what the model now sees in place of these turns."""
    summary_written_at: float | None
    """When a record first held a model-written summary of these turns (None: still owed)."""
    shown: bool
    """A fold the log shows; False for a record that only put a summary in (no new turns)."""
    number: int = 0
    """1-based among the shown folds (0 for the others)."""


def fold_views(history: Sequence[HistoryEntry]) -> list[FoldView]:
    """Every compaction row of `history` (the live log, as `history()` gives it)
    with the turns it folded and whether their summary is written yet.

    A record covers the foldable turns before it except its `resident_turns`
    newest (docs/design.md section 4); what it covers that the record before
    did not is what it folded. Its owed part counts the newest covered
    messages that no summary covers yet, so a fold's summary is written at
    the first record from it on whose owed part holds none of its turns. Why
    here: the UI must never parse a compaction record itself."""
    numbers: dict[int, int] = {}
    foldable: list[HistoryEntry] = []
    rows: list[tuple[HistoryEntry, list[HistoryEntry]]] = []
    for entry in history:
        if entry.kind == "compaction":
            keep = max(0, entry.resident_turns or 0)
            rows.append((entry, foldable[: max(0, len(foldable) - keep)]))
        else:
            numbers[entry.id] = len(numbers) + 1
            if entry.status in _FOLDABLE:
                foldable.append(entry)
    owed = [_owed_turns(entry.summary, covered) for entry, covered in rows]
    current = rows[-1][0].summary if rows else ""
    views: list[FoldView] = []
    seen: set[int] = set()
    shown_count = 0
    for i, (entry, covered) in enumerate(rows):
        new = tuple(t for t in covered if t.id not in seen)
        seen.update(t.id for t in covered)
        ids = {t.id for t in new}
        written = next(
            (rows[j][0].created_at for j in range(i, len(rows)) if not ids & owed[j]), None
        )
        shown = bool(new) or i == 0
        shown_count += shown
        views.append(
            FoldView(
                row_id=entry.id,
                created_at=entry.created_at,
                turns=tuple(FoldedTurn(numbers[t.id], t.created_at, t.user) for t in new),
                covered=len(covered),
                resident_turns=entry.resident_turns,
                summary=entry.summary,
                current_summary=current,
                summary_written_at=written if ids or not owed[i] else None,
                shown=shown,
                number=shown_count if shown else 0,
            )
        )
    return views


def _owed_turns(summary: str, covered: Sequence[HistoryEntry]) -> set[int]:
    """Ids of the newest covered turns a record's owed part counts (see
    memory/budget_restore.awaiting_summary, which restores the same ones)."""
    pending = unsummarized_messages(summary)
    out: set[int] = set()
    for turn in reversed(covered):
        if pending <= 0:
            break
        out.add(turn.id)
        pending -= message_count([(turn.user, turn.assistant)])
    return out


__all__ = [
    "ConversationView",
    "EvidenceCapsule",
    "FoldView",
    "FoldedTurn",
    "HistoryEntry",
    "MemoryStatus",
    "RecordView",
    "ReplyStats",
    "RetentionReport",
    "StoreError",
    "compaction_summary",
    "fold_views",
    "history_entries",
    "make_title",
    "strip_terminal_escapes",
]
