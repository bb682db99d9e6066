"""The MemoryProvider protocol (the methods every provider has) and a base
class carrying their defaults.

Sync or async by what a method does: work that may call the backend
(sync_turn's summarizer, compact) or do I/O (initialize, prefetch,
on_pre_compress, on_session_end) is async; bookkeeping the UI reads or the
resume path runs (build_messages, restore_turns, usage, reset,
take_compaction_record) is sync. Notes are sync and touch memory only; the
persisted path is NoteBook's async methods (newt.memory.notes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, Self, runtime_checkable

from newt.memory.errors import NotesUnsupported
from newt.memory.notes import NoteBook
from newt.memory.types import ConversationTurn, MemMessage, SessionContext, TurnMetrics


@runtime_checkable
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


@runtime_checkable
class CompactingProvider(MemoryProvider, Protocol):
    """Optional: a provider that can fold history on demand (/compact, the
    pre-send guard, overflow recovery). Callers check for it; a provider with
    only the protocol's methods is still a MemoryProvider."""

    async def compact(self, focus: str | None = None) -> bool: ...
    async def compact_for(self, required_tokens: int, *, limit: int | None = None) -> bool: ...


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
