"""The MemoryProvider protocol, the base defaults, rolling_window, the factory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from newt.memory import (
    PROVIDER_NAMES,
    ConversationTurn,
    MemMessage,
    MemoryProvider,
    NoteBook,
    RollingWindow,
    SessionContext,
    TokenBudget,
    TokenEstimation,
    TurnMetrics,
    create_provider,
    format_record,
)

PROTOCOL_METHODS = [
    "build_messages",
    "sync_turn",
    "reset",
    "restore_turns",
    "usage",
    "initialize",
    "system_prompt_block",
    "prefetch",
    "take_compaction_record",
    "on_pre_compress",
    "on_session_end",
    "add_note",
    "replace_note",
    "remove_note",
    "resident_turns",
]


@pytest.mark.parametrize("provider", [TokenBudget(), RollingWindow()], ids=lambda p: p.name)
async def test_both_providers_satisfy_the_protocol_with_seed_defaults(
    provider: MemoryProvider, tmp_path: Path
) -> None:
    for method in PROTOCOL_METHODS:
        assert callable(getattr(provider, method))
    assert await provider.initialize(SessionContext("s1", tmp_path)) is None
    assert await provider.prefetch("anything") == ""
    assert await provider.on_pre_compress([MemMessage("user", "x")]) == ""
    assert await provider.on_session_end([]) is None
    assert provider.system_prompt_block() is None
    assert provider.take_compaction_record() is None


async def test_rolling_window_keeps_the_last_n_turns() -> None:
    p = RollingWindow(3)
    assert (p.name, RollingWindow().max_turns) == ("rolling_window", 20)
    for i in range(5):
        await p.sync_turn(f"q{i}", f"a{i}", TurnMetrics())
    assert p.usage() == ("turns", 3, 3)
    assert [m.content for m in p.build_messages("S", "N")] == [
        "S",
        *("q2", "a2", "q3", "a3", "q4", "a4"),
        "N",
    ]
    assert p.resident_turns() == 3
    assert await p.compact() is False
    assert await p.compact_for(10**6) is True  # no token figure: nothing to decide
    p.reset()
    assert p.usage() == ("turns", 0, 3)


def test_rolling_window_restore_skips_compaction_records() -> None:
    p = RollingWindow(2)
    p.restore_turns(
        [
            ConversationTurn("q0", "a0"),
            ConversationTurn(format_record("s"), "", resident_turns=1, used_after=10),
            ConversationTurn("q1", ""),
            ConversationTurn("q2", "a2"),
        ]
    )
    assert [m.content for m in p.build_messages("S", "N")] == ["S", "q1", "q2", "a2", "N"]


def test_create_provider_defaults_to_token_budget() -> None:
    notes = NoteBook(["Ada is seven."])

    async def summarize(messages: list[MemMessage]) -> str:
        return "s"

    p = create_provider(
        "",
        context_tokens=24000,
        threshold_pct=0.8,
        chars_per_token=3,
        summarizer=summarize,
        notes=notes,
        budget_source="config",
    )
    assert isinstance(p, TokenBudget)
    assert (p.budget, p.budget_source, p.summarizer) == (19200, "config", summarize)
    assert p.estimation == TokenEstimation(3)
    assert p.notes is notes
    assert p.system_prompt_block() == notes.system_prompt_block()
    assert PROVIDER_NAMES == ("token_budget", "rolling_window")


def test_create_provider_can_calibrate_from_a_cached_ratio() -> None:
    p = create_provider(
        "token_budget", context_tokens=8192, threshold_pct=0.8, chars_per_token=3.5, calibrate=True
    )
    assert isinstance(p, TokenBudget) and p.calibrator is not None
    assert p.estimation.chars_per_token == 3.5


def test_create_provider_rolling_window() -> None:
    p = create_provider(
        "Rolling_Window", context_tokens=8192, threshold_pct=0.8, chars_per_token=4, max_turns=7
    )
    assert isinstance(p, RollingWindow)
    assert p.usage() == ("turns", 0, 7)


def test_create_provider_rejects_unknown_names_listing_the_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"'summarizing'.*token_budget, rolling_window"):
        create_provider("summarizing", context_tokens=8192, threshold_pct=0.8, chars_per_token=4)


def test_memory_does_not_import_textual() -> None:
    code = (
        "import sys, newt.memory\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'textual']\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


async def test_what_a_provider_can_do_beyond_the_protocol_is_declared() -> None:
    """TokenBudget declares all three extras by returning itself; a provider on
    the base (RollingWindow) declares none, and its compact frees nothing."""
    budget, window = TokenBudget(), RollingWindow()
    assert budget.anchored() is budget
    assert budget.calibrating() is budget
    assert budget.summarizing() is budget
    assert (window.anchored(), window.calibrating(), window.summarizing()) == (None, None, None)
    assert await window.compact() is False
    assert await window.compact_for(10**9) is True  # it counts turns: nothing to free or refuse
