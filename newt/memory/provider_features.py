"""What a memory provider can do beyond the MemoryProvider protocol, declared.

The session works with any `MemoryProvider`; TokenBudget can do more, and
each extra is a Protocol here that the caller checks with `isinstance`
(mypy then knows the methods), never a `getattr` probe by name. Why: a
contract you can read and type-check, and a provider that offers part of
it says so by what it implements.

- `Anchored`: fullness anchored on the backend's reported prompt size, with
  its own (possibly calibrated) estimate and the system prompt it composes.
- `Calibrating`: learns the chars-per-token estimate from usage reports.
- `Summarizing`: folds now and writes the summary later (deferred
  summaries, `/compact`'s refresh, the record's reply cap).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Self, runtime_checkable

from newt.memory.provider import MemoryProvider

if TYPE_CHECKING:
    from newt.memory.budget_summaries import PendingSummary


@runtime_checkable
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


@runtime_checkable
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


@runtime_checkable
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
