"""What newt learns about each (base_url, model), and the context budget it implies.

The record_* functions update the capability cache (``CapabilityRepo``);
``resolve_budget`` is the pure rule that turns the
cache (plus the user's config) into the TokenBudget's ``max_tokens``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from newt.store.model_cache import CapabilityRepo
from newt.store.models import ModelCapabilities

SAFE_FRACTION = 0.75  # safe_context = floor(75% of the observed overflow)

BudgetSource = Literal["config", "backend", "probe cache", "default"]


@dataclass(frozen=True)
class BudgetResolution:
    context_tokens: int
    source: BudgetSource


def resolve_budget(
    explicit_context_tokens: int | None,
    cap: ModelCapabilities | None,
    default: int = 8192,
) -> BudgetResolution:
    """The context size to budget for, and which source won.

    Precedence, first match wins:

    1. "config": an explicit ``[memory] context_tokens`` (> 0), as given.
    2. "backend": the context window the server declared (probe), lowered to
       ``safe_context`` if an overflow was observed below it.
    3. "probe cache", without a declared window:
       a. ``safe_context`` when an overflow was observed: the window is known
          to be smaller than ``overflow_at``, whatever the default says;
       b. ``max_ok_input`` when it exceeds ``default``: a prompt that big was
          accepted, so the window is at least that. A smaller ``max_ok_input``
          says nothing about the window (every prompt so far was small), so it
          does not shrink the default.
    4. "default": ``default`` (DEFAULT_CONTEXT_TOKENS).

    The TokenBudget applies its own 512-token floor and threshold on top.
    """
    if explicit_context_tokens is not None and explicit_context_tokens > 0:
        return BudgetResolution(explicit_context_tokens, "config")
    if cap is not None:
        safe = cap.safe_context if cap.safe_context and cap.safe_context > 0 else None
        if cap.context_window and cap.context_window > 0:
            window = min(cap.context_window, safe) if safe else cap.context_window
            return BudgetResolution(window, "backend")
        if safe:
            return BudgetResolution(safe, "probe cache")
        if cap.max_ok_input and cap.max_ok_input > default:
            return BudgetResolution(cap.max_ok_input, "probe cache")
    return BudgetResolution(default, "default")


def safe_context_for(overflow_at: int) -> int:
    return math.floor(SAFE_FRACTION * overflow_at)


async def _load(repo: CapabilityRepo, base_url: str, model: str) -> ModelCapabilities:
    return await repo.get(base_url, model) or ModelCapabilities(base_url=base_url, model=model)


async def record_probe(
    repo: CapabilityRepo, base_url: str, model: str, context_window: int | None
) -> ModelCapabilities:
    """Store the declared window. A changed window (the server was restarted with
    another ``-c``) makes the old overflow and largest-accepted figures stale, so
    they are dropped."""
    cap = await _load(repo, base_url, model)
    if context_window is None or context_window <= 0:
        return cap
    if cap.context_window is not None and cap.context_window != context_window:
        cap.max_ok_input = cap.overflow_at = cap.safe_context = None
    cap.context_window = context_window
    await repo.put(cap)
    return cap


async def record_accepted_prompt(
    repo: CapabilityRepo, base_url: str, model: str, prompt_tokens: int
) -> ModelCapabilities:
    """A prompt of this size went through: max_ok_input rises to the largest seen.
    One at or above ``overflow_at`` proves the old overflow no longer holds."""
    cap = await _load(repo, base_url, model)
    if prompt_tokens <= 0 or (cap.max_ok_input or 0) >= prompt_tokens:
        return cap
    cap.max_ok_input = prompt_tokens
    if cap.overflow_at is not None and prompt_tokens >= cap.overflow_at:
        cap.overflow_at = cap.safe_context = None
    await repo.put(cap)
    return cap


async def record_overflow(
    repo: CapabilityRepo, base_url: str, model: str, overflow_at: int
) -> ModelCapabilities:
    """A prompt of ``overflow_at`` tokens (or, if that is all we know, the window
    size) was refused. Keeps the smallest overflow seen; safe_context is 75% of it."""
    cap = await _load(repo, base_url, model)
    if overflow_at <= 0:
        return cap
    if cap.overflow_at is None or overflow_at < cap.overflow_at:
        cap.overflow_at = overflow_at
        cap.safe_context = safe_context_for(overflow_at)
        await repo.put(cap)
    return cap


async def record_tools(
    repo: CapabilityRepo, base_url: str, model: str, supported: bool
) -> ModelCapabilities:
    """Whether the model takes tools (a refusal, or newt's probe of its own server's model)."""
    cap = await _load(repo, base_url, model)
    if cap.supports_tools is not supported:
        cap.supports_tools = supported
        await repo.put(cap)
    return cap


async def record_tools_unsupported(
    repo: CapabilityRepo, base_url: str, model: str
) -> ModelCapabilities:
    """The backend refused a request because it carried tools."""
    return await record_tools(repo, base_url, model, False)


async def record_tools_supported(
    repo: CapabilityRepo, base_url: str, model: str
) -> ModelCapabilities:
    """A request with tools was accepted."""
    return await record_tools(repo, base_url, model, True)
