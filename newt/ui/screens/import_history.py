"""The import screen (palette "Import conversations…", `/import`): a path to type,
or one of the Elia, oterm and llm databases found at their default paths.

The screen only asks and shows: `begin(path, source)` (the chat's ImportCommands)
runs the import in the chat screen's worker, so Esc closes this screen without
stopping it, and calls `progress`, `finished` or `failed` here while it is open.
Why a screen of its own: a big export takes a while, and its progress and summary
(imported, skipped, refused and why) need more room than a toast.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from newt.ui.format import clean

if TYPE_CHECKING:
    from newt.agent.history_import import FoundDatabase

Begin = Callable[[Path, "str | None", "ImportScreen"], None]
"""Start importing (path, source or None to tell it from the file, this screen)."""

KINDS = (
    "A ChatGPT or Claude export (the .zip or its conversations.json), newt JSON/JSONL,"
    " or an Elia, oterm or llm database."
)


def found_label(db: FoundDatabase) -> Content:
    return Content.assemble((f"{db.app} ", "bold"), (clean(str(db.path)), "dim"))


class ImportScreen(ModalScreen[None]):
    CSS_PATH = "import_history.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss", "Close")]

    def __init__(self, found: Sequence[FoundDatabase], begin: Begin) -> None:
        super().__init__()
        self.found = list(found)
        self._begin = begin
        self.running = False
        self.summary: list[str] = []
        """The summary lines once an import ended (or its error, one line)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="import-panel") as panel:
            panel.border_title = "Import conversations"
            panel.border_subtitle = "enter imports · esc closes (an import goes on)"
            yield Static(Content(KINDS), id="import-kinds")
            yield Input(placeholder="path to the file (~ works)", id="import-path")
            if self.found:
                yield Static(Content("Or a database found where its app keeps it:"))
                yield OptionList(
                    *(Option(found_label(db), id=f"found-{i}") for i, db in enumerate(self.found)),
                    id="import-found",
                )
            else:
                yield Static(
                    Content("No Elia, oterm or llm database at their default paths."),
                    id="import-none-found",
                )
            yield ProgressBar(id="import-progress", show_eta=False)
            yield Static("", id="import-status")
            with VerticalScroll(id="import-summary-box"):
                yield Static("", id="import-summary")

    def on_mount(self) -> None:
        self.query_one("#import-progress", ProgressBar).display = False
        self.query_one("#import-path", Input).focus()

    @on(Input.Submitted, "#import-path")
    def _typed(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            self._status("Type the path of the file to import.")
            return
        self._start(Path(text).expanduser(), None)

    @on(OptionList.OptionSelected, "#import-found")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        index = int((event.option.id or "found-0").rsplit("-", 1)[1])
        db = self.found[index]
        self._start(db.path, db.source)

    def _start(self, path: Path, source: str | None) -> None:
        if self.running:
            self._status("An import is running: its summary shows here when it ends.")
            return
        self.running = True
        self.summary = []
        self.query_one("#import-summary", Static).update("")
        self._status(f"Reading {clean(str(path))}…")
        self._begin(path, source, self)

    def _status(self, text: str) -> None:
        self.query_one("#import-status", Static).update(Content(text))

    # -- called by ImportCommands while the import runs ----------------------------

    def progress(self, done: int, total: int, turns: int) -> None:
        if not self.is_attached:
            return
        bar = self.query_one("#import-progress", ProgressBar)
        bar.display = True
        bar.update(total=max(total, 1), progress=done)
        self._status(f"{done}/{total} conversations, {turns} turns written")

    def finished(self, lines: Sequence[str]) -> None:
        self.running = False
        self.summary = list(lines)
        if not self.is_attached:
            return
        self._status("Done: the conversations are in /resume.")
        self.query_one("#import-summary", Static).update(
            Content("\n".join(clean(line) for line in lines))
        )

    def failed(self, text: str) -> None:
        self.running = False
        self.summary = [text]
        if not self.is_attached:
            return
        self.query_one("#import-progress", ProgressBar).display = False
        self._status("")
        self.query_one("#import-summary", Static).update(Content(clean(text)))
