"""The capability cache updates and the budget-source precedence (docs/design.md section 2)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from newt.backend.learned_limits import (
    BudgetResolution,
    record_accepted_prompt,
    record_overflow,
    record_probe,
    record_tools_supported,
    record_tools_unsupported,
    resolve_budget,
)
from newt.store import CapabilityRepo, ModelCapabilities, Store

URL, MODEL = "http://127.0.0.1:8080/v1", "gemma"


@pytest.fixture
async def repo(tmp_path: Path) -> AsyncIterator[CapabilityRepo]:
    store = await Store.open(tmp_path / "newt.db")
    try:
        yield store.capabilities
    finally:
        await store.close()


def cap(**fields: int | None) -> ModelCapabilities:
    return ModelCapabilities(base_url=URL, model=MODEL, **fields)  # type: ignore[arg-type]


# -- resolve_budget: every branch --------------------------------------------------------


@pytest.mark.parametrize(
    ("explicit", "capabilities", "expected"),
    [
        # 1. config wins over everything
        (16000, cap(context_window=2048, safe_context=768), BudgetResolution(16000, "config")),
        (16000, None, BudgetResolution(16000, "config")),
        # 0 / negative is "not set"
        (0, cap(context_window=32768), BudgetResolution(32768, "backend")),
        # 2. declared window
        (None, cap(context_window=32768), BudgetResolution(32768, "backend")),
        # 2. declared window capped by an observed overflow: 75% of 1024
        (
            None,
            cap(context_window=2048, overflow_at=1024, safe_context=768),
            BudgetResolution(768, "backend"),
        ),
        # 2. safe_context above the window does not raise it
        (None, cap(context_window=2048, safe_context=3000), BudgetResolution(2048, "backend")),
        # 2. max_ok_input does not matter once the window is known
        (None, cap(context_window=4096, max_ok_input=20000), BudgetResolution(4096, "backend")),
        # 3a. no window, overflow seen: safe_context even below the default
        (None, cap(overflow_at=3024, safe_context=2268), BudgetResolution(2268, "probe cache")),
        (None, cap(safe_context=2268, max_ok_input=2500), BudgetResolution(2268, "probe cache")),
        # 3b. no window, a prompt bigger than the default was accepted
        (None, cap(max_ok_input=20000), BudgetResolution(20000, "probe cache")),
        # 3b. a small max_ok_input says nothing: default
        (None, cap(max_ok_input=300), BudgetResolution(8192, "default")),
        # 4. nothing known
        (None, cap(), BudgetResolution(8192, "default")),
        (None, None, BudgetResolution(8192, "default")),
    ],
)
def test_resolve_budget(
    explicit: int | None, capabilities: ModelCapabilities | None, expected: BudgetResolution
):
    assert resolve_budget(explicit, capabilities) == expected


def test_resolve_budget_custom_default():
    assert resolve_budget(None, None, default=4096) == BudgetResolution(4096, "default")
    assert resolve_budget(None, cap(max_ok_input=5000), default=4096) == BudgetResolution(
        5000, "probe cache"
    )


# -- recording ---------------------------------------------------------------------------


async def test_record_probe_then_overflow_caps_the_backend_window(repo: CapabilityRepo):
    await record_probe(repo, URL, MODEL, 2048)
    await record_overflow(repo, URL, MODEL, 3024)
    stored = await repo.get(URL, MODEL)
    assert stored is not None
    assert (stored.context_window, stored.overflow_at, stored.safe_context) == (2048, 3024, 2268)
    assert resolve_budget(None, stored) == BudgetResolution(2048, "backend")
    await record_overflow(repo, URL, MODEL, 1000)  # smaller overflow wins: 750
    stored = await repo.get(URL, MODEL)
    assert stored is not None
    assert (stored.overflow_at, stored.safe_context) == (1000, 750)
    assert resolve_budget(None, stored) == BudgetResolution(750, "backend")
    await record_overflow(repo, URL, MODEL, 5000)  # a larger one changes nothing
    stored = await repo.get(URL, MODEL)
    assert stored is not None
    assert stored.overflow_at == 1000


async def test_max_ok_input_only_rises(repo: CapabilityRepo):
    await record_accepted_prompt(repo, URL, MODEL, 900)
    await record_accepted_prompt(repo, URL, MODEL, 400)
    await record_accepted_prompt(repo, URL, MODEL, 1200)
    await record_accepted_prompt(repo, URL, MODEL, 1100)
    stored = await repo.get(URL, MODEL)
    assert stored is not None
    assert stored.max_ok_input == 1200


async def test_accepting_a_prompt_past_the_overflow_clears_it(repo: CapabilityRepo):
    await record_overflow(repo, URL, MODEL, 2048)
    await record_accepted_prompt(repo, URL, MODEL, 1500)
    stored = await repo.get(URL, MODEL)
    assert stored is not None
    assert (stored.overflow_at, stored.safe_context, stored.max_ok_input) == (2048, 1536, 1500)
    await record_accepted_prompt(repo, URL, MODEL, 3000)  # the server must have grown
    stored = await repo.get(URL, MODEL)
    assert stored is not None
    assert (stored.overflow_at, stored.safe_context, stored.max_ok_input) == (None, None, 3000)


async def test_a_changed_window_drops_stale_observations(repo: CapabilityRepo):
    await record_probe(repo, URL, MODEL, 1024)
    await record_overflow(repo, URL, MODEL, 1100)
    await record_accepted_prompt(repo, URL, MODEL, 900)
    await record_probe(repo, URL, MODEL, 1024)  # same window: kept
    stored = await repo.get(URL, MODEL)
    assert stored is not None
    assert (stored.overflow_at, stored.max_ok_input) == (1100, 900)
    await record_probe(repo, URL, MODEL, 8192)  # restarted with -c 8192
    stored = await repo.get(URL, MODEL)
    assert stored is not None
    assert (stored.context_window, stored.overflow_at, stored.safe_context) == (8192, None, None)
    assert stored.max_ok_input is None


async def test_probe_without_a_window_changes_nothing(repo: CapabilityRepo):
    await record_probe(repo, URL, MODEL, None)
    assert await repo.get(URL, MODEL) is None


async def test_tools_support_is_remembered_per_model(repo: CapabilityRepo):
    await record_tools_unsupported(repo, URL, MODEL)
    await record_tools_supported(repo, URL, "other")
    stored = await repo.get(URL, MODEL)
    other = await repo.get(URL, "other")
    assert stored is not None and other is not None
    assert stored.supports_tools is False
    assert other.supports_tools is True
