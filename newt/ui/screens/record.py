"""Records shown in full: a memory record, verbatim (opened from an evidence
capsule), and a fold of the conversation (opened from its line in the log)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import LoadingIndicator, Static

from newt.agent.display import FoldView
from newt.agent.display import RecordView as MemoryRecord
from newt.ui.format import clean, one_line
from newt.ui.widgets.entries import CompactionEntry, fold_size

Fetch = Callable[[str], Awaitable[MemoryRecord | None]]
LoadFolds = Callable[[], Awaitable[Sequence[FoldView] | None]]
TURN_WORDS = 72  # characters of a folded turn's first words


class RecordScreen(ModalScreen[None]):
    CSS_PATH = "record.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss", "Close")]

    def __init__(self, key: str, fetch: Fetch) -> None:
        super().__init__()
        self.key = key
        self._fetch = fetch

    def compose(self) -> ComposeResult:
        with Vertical(id="panel") as panel:
            panel.border_title = f"Record {self.key}"
            panel.border_subtitle = "esc to close"
            yield Static("", id="record-meta")
            with VerticalScroll(id="record-scroll"):
                yield LoadingIndicator()

    def on_mount(self) -> None:
        self._load()

    @work(exclusive=True, group="record", exit_on_error=False)
    async def _load(self) -> None:
        scroll = self.query_one("#record-scroll", VerticalScroll)
        meta = self.query_one("#record-meta", Static)
        try:
            record = await self._fetch(self.key)
        except Exception as exc:  # a store error must not close the app
            record = None
            meta.update(Content(f"Could not load the record: {exc}"))
        await scroll.remove_children()
        if record is None:
            if not meta.content:
                meta.update(Content(f"No record with key {self.key} (it may have been removed)."))
            return
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.created_at))
        meta.update(Content(f"{record.source} · created {created} · {len(record.content):,} chars"))
        await scroll.mount(Static(Content(clean(record.content)), id="record-content"))


def when(at: float) -> str:
    """A local date and time to the minute (the fold screen names the day)."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at))


def fold_meta(fold: FoldView | None) -> str:
    """The fold screen's first line: when, how many turns, whether summarized."""
    if fold is None:
        return "Which turns this fold took is not known (the conversation log could not be read)."
    what = fold_size(fold.turns)
    written = (
        f"summary written {when(fold.summary_written_at)}"
        if fold.summary_written_at is not None
        else "summary not written yet"
    )
    return f"fold {fold.number} · {when(fold.created_at)} · {what} · {written}"


def fold_turn_lines(fold: FoldView | None) -> list[str]:
    """One line per folded turn: its number, date and first words (cleaned)."""
    if fold is None or not fold.turns:
        return ["(which turns is not recorded)"]
    return [
        f"turn {t.number} · {when(t.created_at)} · {one_line(t.user, TURN_WORDS) or '(empty)'}"
        for t in fold.turns
    ]


class FoldScreen(ModalScreen[None]):
    """A fold opened from its line: when it happened, the turns it took (their
    numbers, dates and first words) and the summary the model now sees in
    their place, or that it is still owed. `load` reads the durable log again
    on opening, so a summary that landed after the line was drawn shows.
    Model text is cleaned and shown as Content, never as markup."""

    CSS_PATH = "record.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss", "Close")]

    def __init__(self, entry: CompactionEntry, load: LoadFolds | None = None) -> None:
        super().__init__()
        self.entry = entry
        self._load_folds = load

    def compose(self) -> ComposeResult:
        with Vertical(id="panel") as panel:
            panel.border_title = "Folded into the summary"
            panel.border_subtitle = "esc to close"
            yield Static("", id="record-meta")
            with VerticalScroll(id="record-scroll"):
                yield Static("Turns it covers", classes="fold-heading")
                yield Static("", id="fold-turns")
                yield Static("The summary the model sees in their place", classes="fold-heading")
                yield Static("", id="fold-summary")

    def on_mount(self) -> None:
        self._show(self.entry.fold)
        if self._load_folds is not None:
            self._refresh()

    def _show(self, fold: FoldView | None) -> None:
        self.query_one("#record-meta", Static).update(Content(fold_meta(fold)))
        self.query_one("#fold-turns", Static).update(Content("\n".join(fold_turn_lines(fold))))
        summary = clean(fold.current_summary) if fold is not None else self.entry.summary
        self.query_one("#fold-summary", Static).update(Content(summary or "(no summary)"))

    @work(exclusive=True, group="fold", exit_on_error=False)
    async def _refresh(self) -> None:
        assert self._load_folds is not None
        try:
            folds = await self._load_folds()
        except Exception:  # a store error must not close the app; the line's copy stands
            return
        known = self.entry.fold
        match = next(
            (
                f
                for f in reversed(folds or [])
                if (f.row_id == known.row_id if known else clean(f.summary) == self.entry.summary)
            ),
            None,
        )
        if match is not None:
            self.entry.fold = match
            self._show(match)
