"""What forgetting speaks in: record keys, the forgotten marker, and the report of one forget.

A retrieval key names one record: t<turn> a message, r<turn> its reply,
t<turn>.<n> a tool result, c<row> a compaction summary, n<id> a note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from newt.store.errors import StoreError

FORGOTTEN = "[forgotten]"
"""What a forgotten message reads as in the log, the screen and the request."""
FORGOTTEN_TITLE = "(forgotten)"

SHOWN_MESSAGES = f"""
    COALESCE(SUM((t.user != '{FORGOTTEN}')
                 + (t.assistant IS NOT NULL AND t.assistant NOT IN ('', '{FORGOTTEN}'))), 0)
"""
"""SQL over turns `t` (kind 'turn', not replaced): how many messages they show,
the user's and the replies, a forgotten one not counted. Every count of a
conversation's size (`newt list`, the picker, a delete's question and its
report) is this one, so they agree."""

_KEY = re.compile(r"^([trcn])(\d+)(?:\.(\d+))?$")


@dataclass
class Forgotten:
    """What one forget took away: counts for the user, and the old words of
    the messages (in memory only) so quoting summaries can be found."""

    records: int = 0
    messages: int = 0
    notes: int = 0
    conversations: int = 0
    old_texts: list[str] = field(default_factory=list)
    old_notes: list[str] = field(default_factory=list)
    """The words of forgotten notes: the caller takes them out where they were quoted."""
    touched: set[str] = field(default_factory=set)
    """Conversations whose log changed (to reload if open, to check for quotes)."""
    scrubbed: bool = True
    """False when another process kept the WAL from being truncated."""

    def add(self, other: Forgotten) -> None:
        self.records += other.records
        self.messages += other.messages
        self.notes += other.notes
        self.conversations += other.conversations
        self.old_texts += other.old_texts
        self.old_notes += other.old_notes
        self.touched |= other.touched
        self.scrubbed = self.scrubbed and other.scrubbed


class NotARecordKey(StoreError, ValueError):
    """A key to forget that names no record kind newt has (exit 2)."""


def parse_key(key: str) -> tuple[str, int, int | None]:
    """(kind letter, id, tool result number) of a retrieval key; NotARecordKey otherwise."""
    found = _KEY.match(key.strip())
    if found is None:
        raise NotARecordKey(
            f"{key.strip()!r} is not a record key (like t12, r12, n3 or c40);"
            " a memory search lists them"
        )
    n = found.group(3)
    return found.group(1), int(found.group(2)), int(n) if n is not None else None
