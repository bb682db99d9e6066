"""What every reader yields: conversations in one plain shape, whatever app wrote them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from newt.errors import InputError


class ImportFormatError(InputError, ValueError):
    """A file (or one conversation in it) newt cannot read: names the file and what was wrong."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem


@dataclass(frozen=True)
class ImportedTurn:
    """One exchange; `attachments` are reference lines for what was there but is not copied."""

    user: str
    assistant: str
    said_at: float
    attachments: tuple[str, ...] = ()
    status: str = "complete"
    thinking: str | None = None


def _said(turns: Sequence[ImportedTurn]) -> list[object]:
    return [(t.user, t.assistant, t.said_at, t.attachments) for t in turns]


@dataclass(frozen=True)
class ImportedFork:
    """Another branch of a conversation (ChatGPT keeps every edited prompt and
    regenerated reply): it shares the conversation's first `shared` turns, then
    goes on with `turns`. Written as a newt fork of the conversation."""

    shared: int
    turns: list[ImportedTurn]


@dataclass(frozen=True)
class ImportedConversation:
    source: str
    source_id: str
    title: str
    created_at: float
    turns: list[ImportedTurn] = field(default_factory=list)
    updated_at: float | None = None
    model: str = ""
    forks: list[ImportedFork] = field(default_factory=list)

    def digest(self) -> str:
        """A hash of what is imported: the same conversation read twice hashes the same."""
        parts: list[object] = [self.title, _said(self.turns)]
        if self.forks:  # a conversation without branches hashes as it always did
            parts.append([(f.shared, _said(f.turns)) for f in self.forks])
        body = json.dumps(parts, ensure_ascii=True)
        return hashlib.sha256(body.encode()).hexdigest()


@dataclass(frozen=True)
class Refused:
    """A conversation of a readable file that could not be read (the others still import)."""

    source_id: str
    reason: str


Item = ImportedConversation | Refused


def why(exc: Exception) -> str:
    """What was wrong with a conversation, in words: a missing field by its name,
    anything else by its message (no exception reprs in a summary)."""
    if isinstance(exc, KeyError):
        return f"no {exc.args[0]!r} field" if exc.args else "a field is missing"
    return str(exc) or type(exc).__name__


def parse_time(value: object, *, where: str) -> float:
    """Epoch seconds from a number or an ISO 8601 string (naive means UTC, as the apps write)."""
    if isinstance(value, bool):
        raise ValueError(f"{where}: not a time: {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value.strip():
        text = value.strip().replace("Z", "+00:00")
        try:
            stamp = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"{where}: not a time: {value!r}") from None
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=UTC)
        return stamp.timestamp()
    raise ValueError(f"{where}: not a time: {value!r}")


def reference(kind: str, name: str, detail: str = "") -> str:
    """The line kept in place of an image or file that is not copied into newt."""
    more = f", {detail}" if detail else ""
    return f"[{kind} not imported: {name}{more}]"


def pair_messages(
    messages: Sequence[tuple[str, str, float, tuple[str, ...]]],
) -> list[ImportedTurn]:
    """(role, text, time, refs) in order -> turns: a user message opens a turn, what the
    assistant says until the next user message is its reply; system/tool messages are left out.

    Apps store messages, newt stores exchanges: consecutive messages of one side join."""
    turns: list[ImportedTurn] = []
    user: list[str] = []
    reply: list[str] = []
    refs: list[str] = []
    said: float | None = None

    def close() -> None:
        if said is not None and (user or reply or refs):
            turns.append(ImportedTurn("\n\n".join(user), "\n\n".join(reply), said, tuple(refs)))

    for role, text, when, attached in messages:
        if role == "user":
            if reply:
                close()
                user, reply, refs, said = [], [], [], None
            if text.strip():
                user.append(text)
            refs.extend(attached)
            said = when if said is None else said
        elif role == "assistant":
            if text.strip():
                reply.append(text)
            reply.extend(attached)
            said = when if said is None else said
    close()
    return turns
