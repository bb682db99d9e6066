"""Plain rows the repositories hand out (no ORM, no textual)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

TurnKind = Literal["turn", "compaction"]
TurnStatus = Literal["pending", "complete", "interrupted", "failed"]
RecordSource = Literal["turn", "note", "compaction"]
RecordRole = Literal["user", "assistant", "tool"]


@dataclass
class Conversation:
    id: str
    title: str
    model: str
    base_url: str
    created_at: float
    updated_at: float
    turn_count: int = 0
    """The user's messages (each with its reply, if any)."""
    message_count: int = 0
    """Messages it shows, the user's and the replies, a forgotten one not counted:
    every count of its size (store.forgotten.SHOWN_MESSAGES)."""
    parent_id: str | None = None
    """The conversation this one was forked from (None: not a fork)."""
    parent_title: str | None = None
    incognito: bool = False
    """Kept out of memory: none of its words are indexed, embedded or recalled."""


@dataclass
class StoredTurn:
    id: int
    conversation_id: str
    kind: TurnKind
    status: TurnStatus
    user: str
    assistant: str
    tokens_in: int | None
    tokens_out: int | None
    resident_turns: int | None
    used_after: int | None
    tool_events: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    created_at: float = 0.0
    thinking: str = ""
    """The model's reasoning: shown and exported, never sent back or indexed."""
    prompt_tokens: int | None = None
    """The footer's counts: the whole request as the backend reported it."""
    completion_tokens: int | None = None
    reply_seconds: float | None = None
    """Streaming time from the first token to the last (tool rounds summed)."""
    tokens_estimated: bool = False
    """The counts are newt's estimate: the backend sent no usage."""
    stopped_for_length: bool = False
    """The backend stopped the reply at its length cap (migration 15)."""

    replaced_by: int | None = None
    """Regenerate/edit: the turn that replaced this one (kept, never sent or recalled)."""
    copied_from: int | None = None
    """Fork: the original turn this row copies (its recall record is the original's)."""
    attachments: list[dict[str, Any]] = field(default_factory=list)
    """What the prompt attached, by reference: {kind, path, size, sha256, mime}."""

    @property
    def record_key(self) -> str:
        """The retrieval key of this row's recall record (a copy shares the original's)."""
        return f"{'c' if self.kind == 'compaction' else 't'}{self.copied_from or self.id}"

    @property
    def record_keys(self) -> tuple[str, ...]:
        """Every recall record of this row: a turn's message and its reply."""
        if self.kind == "compaction":
            return (self.record_key,)
        return (self.record_key, f"r{self.copied_from or self.id}")


@dataclass
class ReplyDetails:
    """What a finished reply carries beside its text (migration 7)."""

    thinking: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reply_seconds: float | None = None
    tokens_estimated: bool = False
    stopped_for_length: bool = False
    """The backend stopped the reply at its length cap (migration 15)."""


@dataclass
class MemoryRecord:
    """One recallable record; `key` is the retrieval key that fetches it verbatim."""

    id: int
    key: str
    source: RecordSource
    conversation_id: str | None
    content: str
    access_count: int
    created_at: float
    score: float = 0.0
    role: RecordRole | None = None
    """Who said it: "user", "assistant", "tool"; None for a note or a summary."""
    said_at: float = 0.0
    """When it was said (a turn's time; an imported turn keeps its own)."""
    turn_id: int | None = None
    """The turn (or compaction row) it belongs to; None for a note."""
    newer_key: str | None = None
    """Recall only: the key of a later record about the same thing (its newer
    statement), which must ride along wherever this one goes."""


@dataclass
class ModelCapabilities:
    """What we know about one (base_url, model) pair; None means unknown."""

    base_url: str
    model: str
    context_window: int | None = None
    max_ok_input: int | None = None
    safe_context: int | None = None
    overflow_at: int | None = None
    supports_tools: bool | None = None
    chars_per_token: float | None = None
    per_message_tokens: float | None = None
    per_reply_tokens: float | None = None
    updated_at: float = 0.0
