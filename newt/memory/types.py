"""Plain data shared by every memory provider."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

DEFAULT_CONTEXT_TOKENS = 8192
COMPACTION_MARKER = "[CONTEXT COMPACTION — REFERENCE ONLY]"
COMPACTION_END = "--- END OF CONTEXT SUMMARY ---"


@dataclass
class MemMessage:
    role: str  # "system" | "user" | "assistant" | "tool"
    content: str


@dataclass
class Usage:
    """What the backend reported for one request: prompt_tokens / completion_tokens."""

    input_tokens: int
    output_tokens: int


@dataclass
class TurnMetrics:
    usage: Usage | None = None


@dataclass
class ConversationTurn:
    """One entry of the durable log as a provider sees it.

    A compaction record has an empty `assistant` and a `user` that starts with
    COMPACTION_MARKER; only records carry `resident_turns`/`used_after` (so
    either tells one apart).
    """

    user: str
    assistant: str
    tokens_in: int | None = None
    tokens_out: int | None = None
    resident_turns: int | None = None
    used_after: int | None = None
    kind: str | None = field(default=None, compare=False)
    """"turn" or "compaction" when the caller knows (the durable log does);
    None falls back to recognising a record by its shape."""

    @property
    def is_compaction(self) -> bool:
        if self.kind is not None:
            return self.kind == "compaction"
        return self.assistant == "" and (
            self.user.startswith(COMPACTION_MARKER) or self.resident_turns is not None
        )


@dataclass
class SessionContext:
    session_id: str
    workspace: Path


class Estimator(Protocol):
    """What providers need from a token estimate (TokenEstimation, or the
    learned CalibratedEstimation of calibration.py)."""

    @property
    def chars_per_token(self) -> float: ...
    def tokens_for(self, text: str) -> int: ...


@dataclass(frozen=True)
class TokenEstimation:
    """chars -> tokens heuristic between backend reports.

    `chars_per_token` defaults to 4; a float is accepted too so a
    ratio learned from the backend's own reports (see calibration.py) can drive
    the same rule: tokens_for(text) = ceil(len(text) / max(1, chars_per_token)).
    """

    chars_per_token: float = 4

    def tokens_for(self, text: str) -> int:
        ratio = max(1, self.chars_per_token)
        if isinstance(ratio, int):
            return -(-len(text) // ratio)  # exact integer ceil, no float rounding
        return math.ceil(len(text) / ratio)


@dataclass(frozen=True)
class PendingSummary:
    """A summary written for the first `turns` unsummarized folded turns.

    `basis` is what it was written from (the previous summary and the folded
    turns' text): it applies to any provider whose record and unsummarized
    turns still start from the same basis, so a newt that reloaded the
    conversation (another process appended a turn meanwhile) can still take it.
    """

    basis: tuple[str | None, tuple[tuple[str, str], ...]]
    turns: int
    summary: str
    folds: int = 1  # folds owed when it was written: later ones stay owed after it
