"""The /memory panel: what the memory provider is doing, in figures, and the
folds of the current conversation."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from newt.ui.format import FULLNESS, ago, meter_level, meter_text, tokens
from newt.ui.widgets.entries import fold_size
from newt.ui.widgets.token_meter import bar

if TYPE_CHECKING:
    from newt.agent.display import FoldView
    from newt.agent.own_memory.status import MemoryStatus

LoadFolds = Callable[[], Awaitable[Sequence["FoldView"] | None]]
FOLDS_LISTED = 8  # the newest folds listed; older ones are counted

SOURCES = {
    "config": "explicit config ([memory] context_tokens)",
    "backend": "backend-declared context window",
    "probe cache": "probe cache (limits observed earlier)",
    "default": "default (no window known)",
}


def memory_rows(status: MemoryStatus) -> list[tuple[str, str]]:
    """(label, value) rows for a MemoryStatus; pure so tests can read them."""
    used, budget = int(status.used), int(status.budget)
    rows = [
        ("provider", f"{status.provider}"),
        ("fullness", f"{meter_text(used, budget)}: {FULLNESS}"),
        (
            "budget",
            f"{tokens(budget)} tokens of a {tokens(status.context_tokens)}-token window"
            f" · source: {SOURCES.get(status.budget_source, status.budget_source)}",
        ),
    ]
    if status.last_reported is None:
        rows.append(("last reported", "no backend report yet (figures are estimates)"))
    else:
        rows.append(
            (
                "last reported",
                f"{tokens(status.last_reported)} prompt tokens"
                f" · estimate delta since {status.estimate_delta:+,}",
            )
        )
    rows += [
        ("turns", f"{status.resident_turns} resident of {status.total_turns}"),
        ("conversation tokens", conversation_tokens(status)),
        ("notes", f"{status.notes_used:,}/{status.notes_limit:,} characters"),
        (
            "tools",
            f"{tokens(status.tool_tokens)} tokens of schemas per request"
            f" · {status.tools_offered} tools ({status.mcp_tools} from MCP servers)",
        ),
    ]
    report = status.last_retention
    if report is None:
        rows.append(("last retention", "none yet"))
    else:
        rows.append(
            (
                "last retention",
                f"{tokens(report.retained_tokens)}/{tokens(report.budget_tokens)} tokens"
                f" · {len(report.capsules)} capsules · {report.dropped} dropped"
                f" · {report.candidates_examined} examined",
            )
        )
    if status.summary_failure:  # an owed summary that did not land says why
        rows.append(
            (
                "last summary",
                f"failed: {status.summary_failure}; the folded turns keep your own words"
                " until newt asks again after the next fold",
            )
        )
    return rows


def conversation_tokens(status: MemoryStatus) -> str:
    """Prompt and completion tokens summed over the conversation's replies."""
    replies = status.total_replies
    if not replies:
        return "no replies yet"
    estimated = status.total_estimated
    text = (
        f"{tokens(status.total_prompt_tokens)} prompt + "
        f"{tokens(status.total_completion_tokens)} completion"
        f" over {replies} repl{'y' if replies == 1 else 'ies'}"
    )
    if estimated:
        text += f" · ~{estimated} estimated (no usage from the backend)"
    if status.total_cached_tokens:
        text += (
            f" · {tokens(status.total_cached_tokens)} of this session's prompt tokens"
            " read from the server's cache"
        )
    return text


def fold_lines(folds: Sequence[FoldView] | None, now: float | None = None) -> list[str]:
    """The folds row of the panel: a count, then one line per fold (newest
    last): when, how many turns and which, summary written or still owed.
    Pure so tests can read it; times are relative, as the picker's are."""
    if folds is None:
        return ["not known (the conversation log could not be read)"]
    shown = [f for f in folds if f.shown]
    if not shown:
        return ["none yet: every turn is still in the window"]
    owed = sum(1 for f in shown if f.summary_written_at is None)
    head = f"{len(shown)} in this conversation"
    head += f" · {owed} summary still owed" if owed else " · every summary written"
    lines = [head]
    if len(shown) > FOLDS_LISTED:
        lines.append(f"… {len(shown) - FOLDS_LISTED} earlier")
    for fold in shown[-FOLDS_LISTED:]:
        what = fold_size(fold.turns)
        written = (
            "summary still owed"
            if fold.summary_written_at is None
            else f"summary written {ago(fold.summary_written_at, now)}"
        )
        lines.append(f"{fold.number} · {ago(fold.created_at, now)} · {what} · {written}")
    return lines


class MemoryScreen(ModalScreen[None]):
    CSS_PATH = "memory.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,ctrl+g", "dismiss", "Close"),
    ]

    def __init__(self, status: MemoryStatus, folds: LoadFolds) -> None:
        """`folds` reads the conversation's folds (the chat log's `load_folds`,
        from the session's durable log)."""
        super().__init__()
        self.status = status
        self._load_folds = folds
        self.folds: Sequence[FoldView] | None = None

    def compose(self) -> ComposeResult:
        status = self.status
        used, budget = int(status.used), int(status.budget)
        level = meter_level(used, budget)
        with Vertical(id="panel") as panel:
            panel.border_title = "Memory"
            panel.border_subtitle = "esc to close"
            yield Static(
                Content(f"{bar(used, budget, 40)}  {meter_text(used, budget)}"),
                id="usage-bar",
                classes=f"-{level}",
            )
            for label, value in memory_rows(status):
                with Vertical(classes="row"):
                    yield Static(label, classes="label")
                    yield Static(Content(value), classes="value")
            with Vertical(classes="row"):
                yield Static("folds", classes="label")
                yield Static(Content("…"), classes="value", id="memory-folds")

    async def on_mount(self) -> None:
        # Awaited here, before the panel settles: a read of the local log.
        try:
            self.folds = await self._read_folds()
        except Exception:  # informative only: never let it break the panel
            self.folds = None
        self.query_one("#memory-folds", Static).update(Content("\n".join(fold_lines(self.folds))))

    async def _read_folds(self) -> Sequence[FoldView] | None:
        return await self._load_folds()
