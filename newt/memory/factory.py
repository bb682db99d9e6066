"""`[memory] provider` -> a configured MemoryProvider."""

from __future__ import annotations

from newt.memory.compaction import Summarizer
from newt.memory.notes import NoteBook
from newt.memory.provider import MemoryProvider
from newt.memory.rolling_window import DEFAULT_MAX_TURNS, RollingWindow
from newt.memory.token_budget import TokenBudget
from newt.memory.types import TokenEstimation

PROVIDER_NAMES = ("token_budget", "rolling_window")
DEFAULT_PROVIDER = "token_budget"


def create_provider(
    name: str = DEFAULT_PROVIDER,
    *,
    context_tokens: int,
    threshold_pct: float,
    chars_per_token: float,
    summarizer: Summarizer | None = None,
    notes: NoteBook | None = None,
    budget_source: str = "default",
    max_turns: int = DEFAULT_MAX_TURNS,
    calibrate: bool = False,
    fold_to: float = 1.0,
) -> MemoryProvider:
    """Build the provider named by `[memory] provider` (token_budget by default).

    `context_tokens` is the caller's resolved context size (see
    newt.backend.learned_limits.resolve_budget) and `budget_source` the source
    that won. `calibrate` learns the token estimate from the backend's reports
    starting from `chars_per_token` (see calibration.py); off, estimates are
    the plain chars / chars_per_token. `fold_to`: the share of the budget a
    fold leaves (1.0: just under it). rolling_window ignores the
    token settings and keeps `max_turns`.
    """
    key = (name or DEFAULT_PROVIDER).strip().lower()
    if key == "token_budget":
        provider = (
            TokenBudget(context_tokens, threshold_pct)
            .with_budget(context_tokens, source=budget_source)
            .with_estimation(TokenEstimation(chars_per_token))
            .with_summarizer(summarizer)
            .with_fold_to(fold_to)
        )
        if calibrate:
            provider.set_chars_per_token(chars_per_token)
        provider.with_notes(notes)
        return provider
    if key == "rolling_window":
        window = RollingWindow(max_turns)
        window.with_notes(notes)
        return window
    valid = ", ".join(PROVIDER_NAMES)
    raise ValueError(f"Unknown memory provider {name!r}; valid providers are: {valid}.")
