"""The MemoryProvider protocol (the methods every provider has) and a base
class carrying their defaults.

Sync or async by what a method does: work that may call the backend
(sync_turn's summarizer, compact) or do I/O (initialize, prefetch,
on_pre_compress, on_session_end) is async; bookkeeping the UI reads or the
resume path runs (build_messages, restore_turns, usage, reset,
take_compaction_record) is sync. Notes are sync and touch memory only; the
persisted path is NoteBook's async methods (newt.memory.notes).

What a provider can do beyond these methods is declared, not probed for:
`anchored()`, `calibrating()` and `summarizing()` return the provider as that
capability's Protocol (Anchored, Calibrating, Summarizing, below), or None where it has
none (BaseProvider's default). Why: a caller asks the provider, and mypy knows
the methods of what it gets back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, Self

from newt.memory.errors import NotesUnsupported
from newt.memory.notes import NoteBook
from newt.memory.types import (
    ConversationTurn,
    MemMessage,
    PendingSummary,
    SessionContext,
    TurnMetrics,
)


class MemoryProvider(Protocol):
    name: str

    def build_messages(self, system_prompt: str, new_task: str) -> list[MemMessage]: ...
    async def sync_turn(self, user: str, assistant: str, metrics: TurnMetrics) -> None: ...
    def reset(self) -> None: ...
    def restore_turns(self, turns: Sequence[ConversationTurn]) -> None: ...
    def usage(self) -> tuple[str, int, int] | None: ...
    async def initialize(self, ctx: SessionContext) -> None: ...
    def system_prompt_block(self) -> str | None: ...
    async def prefetch(self, query: str) -> str: ...
    def take_compaction_record(self) -> str | None: ...
    async def on_pre_compress(self, messages: Sequence[MemMessage]) -> str: ...
    async def on_session_end(self, messages: Sequence[MemMessage]) -> None: ...
    def add_note(self, fact: str) -> None: ...
    def replace_note(self, old_substring: str, new_text: str) -> None: ...
    def remove_note(self, substring: str) -> None: ...
    # DESIGN section 2: the caller persists compaction records with resident_turns().
    def resident_turns(self) -> int: ...
    # Folding on demand (/compact, the pre-send guard, overflow recovery); the
    # default frees nothing and says whether the request fits.
    async def compact(self, focus: str | None = None) -> bool: ...
    async def compact_for(self, required_tokens: int, *, limit: int | None = None) -> bool: ...
    # What it can do beyond these, declared (None: it cannot).
    def anchored(self) -> Anchored | None: ...
    def calibrating(self) -> Calibrating | None: ...
    def summarizing(self) -> Summarizing | None: ...


# What a provider can do beyond the protocol, each declared by returning itself
# from the matching method. Anchored: fullness anchored on the backend's
# reported prompt size, with its own (possibly calibrated) estimate and the
# system prompt it composes. Calibrating: learns the chars-per-token estimate
# from usage reports. Summarizing: folds now and writes the summary later
# (deferred summaries, /compact's refresh, the record's reply cap).


class Anchored(MemoryProvider, Protocol):
    @property
    def last_reported(self) -> int | None: ...
    @property
    def estimate_delta(self) -> int: ...
    @property
    def total_turns(self) -> int: ...
    @property
    def compactions(self) -> int: ...
    def tokens_for(self, text: str) -> int: ...
    def content_tokens(self, text: str) -> int: ...
    def shift_anchor(self, tokens: int) -> None: ...
    def compose_system_prompt(self, system_prompt: str) -> str: ...


class Calibrating(MemoryProvider, Protocol):
    @property
    def learned_chars_per_token(self) -> float | None: ...
    @property
    def learned_glue(self) -> tuple[float, float] | None: ...
    def set_chars_per_token(
        self,
        ratio: float,
        per_message_tokens: float | None = None,
        per_reply_tokens: float | None = None,
    ) -> None: ...


class Summarizing(MemoryProvider, Protocol):
    @property
    def summary_pending(self) -> bool: ...
    @property
    def summary_overdue(self) -> bool: ...
    @property
    def owed_steps(self) -> int: ...
    @property
    def summary_reply_tokens(self) -> int: ...
    @property
    def summary_failure(self) -> str | None: ...
    def with_deferred_summaries(self, defer: bool = True) -> Self: ...
    async def summarize_pending(self) -> PendingSummary | None: ...
    def apply_summary(self, result: PendingSummary | None) -> bool: ...
    async def refresh_summary(self) -> bool: ...


class BaseProvider:
    """The protocol's defaults: no-ops, nothing to compact, NotesUnsupported
    unless a NoteBook is attached with `with_notes`."""

    name = "base"

    def __init__(self) -> None:
        self.notes: NoteBook | None = None

    def with_notes(self, notebook: NoteBook | None) -> Self:
        self.notes = notebook
        return self

    def compose_system_prompt(self, system_prompt: str) -> str:
        """The system message: the caller's prompt plus system_prompt_block()."""
        block = self.system_prompt_block()
        if not block:
            return system_prompt
        return f"{system_prompt.rstrip()}\n\n{block}" if system_prompt.strip() else block

    def system_prompt_block(self) -> str | None:
        return self.notes.system_prompt_block() if self.notes is not None else None

    async def initialize(self, ctx: SessionContext) -> None:
        return None

    async def prefetch(self, query: str) -> str:
        return ""

    def take_compaction_record(self) -> str | None:
        return None

    async def on_pre_compress(self, messages: Sequence[MemMessage]) -> str:
        return ""

    async def on_session_end(self, messages: Sequence[MemMessage]) -> None:
        return None

    async def compact(self, focus: str | None = None) -> bool:
        return False

    async def compact_for(self, required_tokens: int, *, limit: int | None = None) -> bool:
        """Default: nothing can be freed; report whether the request fits."""
        usage = self.usage()
        if usage is None or usage[0] != "tokens":
            return True
        ceiling = usage[2] if limit is None else limit
        return usage[1] + required_tokens <= ceiling

    def usage(self) -> tuple[str, int, int] | None:
        return None

    def anchored(self) -> Anchored | None:
        return None

    def calibrating(self) -> Calibrating | None:
        return None

    def summarizing(self) -> Summarizing | None:
        return None

    def add_note(self, fact: str) -> None:
        if self.notes is None:
            raise NotesUnsupported(self.name)
        self.notes.add_local(fact)

    def replace_note(self, old_substring: str, new_text: str) -> None:
        if self.notes is None:
            raise NotesUnsupported(self.name)
        self.notes.replace_local(old_substring, new_text)

    def remove_note(self, substring: str) -> None:
        if self.notes is None:
            raise NotesUnsupported(self.name)
        self.notes.remove_local(substring)
