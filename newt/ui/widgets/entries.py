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
    from newt.agent.views import HistoryEntry, ReplyStats


@dataclass
class ToolCall:
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
    parts: list[str | ToolCall] = field(default_factory=list)
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
    summary: str
    resident_turns: int | None = None


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


def compaction_summary(record: str) -> str:
    """The summary body of a compaction record, without the marker boilerplate."""
    from newt.agent.views import compaction_summary as record_summary  # see format.clean

    return clean(record_summary(record))


def _tool_call(event: dict[str, Any], index: int) -> ToolCall:
    args = event.get("arguments", {})
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            args = {"raw": args}
    result = event.get("result")
    return ToolCall(
        call_id=str(event.get("call_id") or event.get("id") or index),
        name=str(event.get("name", "tool")),
        arguments=args if isinstance(args, dict) else {"value": args},
        result="" if result is None else str(result),
        error=bool(event.get("error", False)),
    )


def entries_from_history(turns: Sequence[HistoryEntry]) -> list[Entry]:
    """The durable log as log entries (compaction records become dividers)."""
    entries: list[Entry] = []
    for turn in turns:
        if turn.kind == "compaction":
            entries.append(CompactionEntry(clean(turn.summary), turn.resident_turns))
            continue
        attached = getattr(turn, "attached", None)
        entries.append(UserEntry(turn.user + ("\n📎 " + ", ".join(attached) if attached else "")))
        parts: list[str | ToolCall] = [
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
