"""What the chat log shows, as plain data.

The log keeps every entry but mounts widgets for only a window of them; the
entries are what lets it rebuild a widget the user scrolls back to. A streaming
assistant message mutates its entry as events arrive, so a rebuilt widget shows
the same thing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from newt.ui.format import clean

if TYPE_CHECKING:
    from newt.agent.display import FoldedTurn, FoldView, HistoryEntry, ReplyStats


@dataclass
class ToolCallEntry:
    call_id: str
    name: str
    arguments: dict[str, Any]
    result: str | None = None
    error: bool = False

    @property
    def state(self) -> str:
        if self.result is None:
            return "running"
        return "error" if self.error else "done"


@dataclass
class UserEntry:
    text: str


@dataclass
class AssistantEntry:
    parts: list[str | ToolCallEntry] = field(default_factory=list)
    """Reply text segments and tool calls, in the order they happened."""
    status: str = "streaming"  # streaming | complete | interrupted | failed
    thinking: str = ""
    """The model's reasoning, shown collapsed above the reply."""
    stats: ReplyStats | None = None
    """Token counts and speed for the footer, once the reply is done."""

    @property
    def text(self) -> str:
        return "".join(p for p in self.parts if isinstance(p, str))


@dataclass
class CompactionEntry:
    """Where turns were folded into the compaction record: a quiet line that opens.

    `summary` is the record's summary, already cleaned. `fold` says which turns
    it folded and whether their summary is written; a fold shown live starts
    without it (the turn's event does not say) and the log fills it in from
    the durable log (`ChatLog.resolve_folds`)."""

    summary: str
    resident_turns: int | None = None
    fold: FoldView | None = None

    @property
    def line(self) -> str:
        """The log's line: how many turns went, and which."""
        fold = self.fold
        if fold is None or not fold.turns:
            return "earlier turns folded into the summary"
        n = len(fold.turns)
        return (
            f"{n} earlier turn{'s' if n != 1 else ''} folded into the summary"
            f" · {turn_span(fold.turns)}"
        )


@dataclass
class NoticeEntry:
    text: str
    level: str = "info"  # info | feedback | warning


@dataclass
class ErrorEntry:
    message: str
    retry_text: str | None = None
    """The user's message to send again; None when a retry makes no sense."""


Entry = UserEntry | AssistantEntry | CompactionEntry | NoticeEntry | ErrorEntry


def turn_numbers(turns: Sequence[FoldedTurn]) -> str:
    """Turn numbers as runs: 3; 1–6; 1–3, 5 (a failed turn is never folded)."""
    runs: list[list[int]] = []
    for n in sorted(t.number for t in turns):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in runs)


def turn_span(turns: Sequence[FoldedTurn]) -> str:
    """The numbers with their noun: turn 3; turns 1–6; turns 1–3, 5."""
    return f"turn{'s' if len(turns) != 1 else ''} {turn_numbers(turns)}"


def fold_size(turns: Sequence[FoldedTurn]) -> str:
    """How many turns and which: 6 turns (1–6); "earlier turns" when not recorded."""
    n = len(turns)
    return f"{n} turn{'s' if n != 1 else ''} ({turn_numbers(turns)})" if n else "earlier turns"


def compaction_summary(record: str) -> str:
    """The summary body of a compaction record, without the marker boilerplate."""
    from newt.agent.display import compaction_summary as record_summary  # see format.clean

    return clean(record_summary(record))


def _tool_call(event: dict[str, Any], index: int) -> ToolCallEntry:
    args = event.get("arguments", {})
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            args = {"raw": args}
    result = event.get("result")
    return ToolCallEntry(
        call_id=str(event.get("call_id") or event.get("id") or index),
        name=str(event.get("name", "tool")),
        arguments=args if isinstance(args, dict) else {"value": args},
        result="" if result is None else str(result),
        error=bool(event.get("error", False)),
    )


def entries_from_history(turns: Sequence[HistoryEntry]) -> list[Entry]:
    """The durable log as log entries: a compaction record that folded turns
    becomes a fold line where it was written; one that only put a written
    summary in shows nowhere (the fold it summarized says so when opened),
    as a live session never shows it either."""
    from newt.agent.display import fold_views  # loaded with the agent, like format.clean

    folds = {f.row_id: f for f in fold_views(turns)}
    entries: list[Entry] = []
    for turn in turns:
        if turn.kind == "compaction":
            fold = folds.get(turn.id)
            if fold is None or fold.shown:
                entries.append(CompactionEntry(clean(turn.summary), turn.resident_turns, fold))
            continue
        attached = turn.attached
        entries.append(UserEntry(turn.user + ("\n📎 " + ", ".join(attached) if attached else "")))
        parts: list[str | ToolCallEntry] = [
            _tool_call(e, i) for i, e in enumerate(turn.tool_events) if isinstance(e, dict)
        ]
        if turn.assistant:
            parts.append(clean(turn.assistant))
        thinking, stats = clean(turn.thinking).strip(), turn.stats
        if turn.status == "failed":
            if parts:
                entries.append(AssistantEntry(parts, "interrupted", thinking, stats))
            entries.append(ErrorEntry(turn.error or "This turn failed.", turn.user))
        elif turn.status in ("interrupted", "pending"):
            entries.append(AssistantEntry(parts, "interrupted", thinking, stats))
        else:
            entries.append(AssistantEntry(parts, "complete", thinking, stats))
    return entries
