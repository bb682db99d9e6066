"""A filterable list to choose from: the /model and /preset pickers.

The choices load in a worker (a backend listing its models may be slow; the
screen stays live and Esc always closes it). Typing filters: every word typed
must appear in the name or its description. Enter takes the highlighted
choice. Where a free name is allowed (/model), Enter with nothing matching
takes the typed text, and a list that could not be loaded says why and
leaves the box as a plain text input.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.events import Key
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from newt.ui.errors import describe
from newt.ui.format import clean, one_line, tokens

LOAD_TIMEOUT_S = 8.0
"""The session's own listing gives up sooner; this is the screen's last word."""


@dataclass(frozen=True)
class Choice:
    id: str
    detail: str = ""
    current: bool = False

    def matches(self, words: Sequence[str]) -> bool:
        haystack = f"{self.id} {self.detail}".lower()
        return all(w in haystack for w in words)


Load = Callable[[], Awaitable[Sequence[Choice]]]


def model_detail(context_window: int | None, detail: str) -> str:
    parts = [f"context {tokens(context_window)}" if context_window else "context unknown"]
    if detail:
        parts.append(detail)
    return " · ".join(parts)


class ChoicePickerScreen(ModalScreen[str | None]):
    """Dismisses with the chosen id (or, with `free_text`, the typed name), or None."""

    CSS_PATH = "choice_picker.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Close")]

    def __init__(
        self,
        title: str,
        load: Load,
        *,
        placeholder: str,
        free_text: bool = False,
        noun: str = "item",
    ) -> None:
        super().__init__()
        self._title = title
        self._load = load
        self._placeholder = placeholder
        self.free_text = free_text
        self.noun = noun
        self.choices: list[Choice] = []
        self.shown: list[Choice] = []
        self.loaded = False
        self.unavailable: str | None = None
        """Why the list could not be loaded (the box is then a plain input)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="panel") as panel:
            panel.border_title = Content(self._title)  # a URL may hold [::1]: no markup
            panel.border_subtitle = "type to filter · enter chooses · esc closes"
            yield Input(placeholder=self._placeholder, id="picker-search")
            yield OptionList(id="picker-list")
            yield Static("Loading…", id="picker-status")

    def on_mount(self) -> None:
        self.query_one("#picker-list", OptionList).can_focus = False
        self.load_choices()

    @work(exclusive=True, group="choice-load", exit_on_error=False)
    async def load_choices(self) -> None:
        try:
            async with asyncio.timeout(LOAD_TIMEOUT_S):
                found = list(await self._load())
        except TimeoutError:
            self._unavailable(f"no answer within {LOAD_TIMEOUT_S:g} s")
            return
        except Exception as exc:
            self._unavailable(describe(exc))
            return
        self.choices = found
        self.loaded = True
        self._show(self.query_one("#picker-search", Input).value)

    def _unavailable(self, reason: str) -> None:
        self.unavailable = reason
        self.query_one("#picker-list", OptionList).display = False
        hint = f" Type a {self.noun} name and press Enter." if self.free_text else ""
        self.query_one("#picker-status", Static).update(Content(clean(reason) + "." + hint))

    def _show(self, text: str) -> None:
        words = text.lower().split()
        self.shown = [c for c in self.choices if c.matches(words)]
        options = self.query_one("#picker-list", OptionList)
        options.clear_options()
        options.add_options(Option(self._prompt(c), id=c.id) for c in self.shown)
        if self.shown:
            current = next((i for i, c in enumerate(self.shown) if c.current), 0)
            options.highlighted = current if not words else 0
        status = self.query_one("#picker-status", Static)
        if not self.choices:
            status.update(f"No {self.noun}s to choose from.")
        elif self.shown:
            status.update(f"{len(self.shown)} of {len(self.choices)} {self.noun}s")
        elif self.free_text and text.strip():
            status.update(Content(f"No {self.noun} matches; Enter uses “{one_line(text, 40)}”."))
        else:
            status.update(f"No {self.noun} matches.")

    @staticmethod
    def _prompt(choice: Choice) -> Content:
        mark = "● " if choice.current else "  "
        line = Content.assemble((mark, "$accent"), (one_line(clean(choice.id), 70), "bold"))
        if choice.detail:
            line = Content.assemble(line, "\n    ", (one_line(clean(choice.detail), 80), "dim"))
        return line

    @on(Input.Changed, "#picker-search")
    def _changed(self, event: Input.Changed) -> None:
        if self.loaded:
            self._show(event.value)

    def on_key(self, event: Key) -> None:
        # Focus stays in the box; arrows move the list.
        options = self.query_one("#picker-list", OptionList)
        if event.key in ("down", "up"):
            getattr(options, f"action_cursor_{event.key}")()
            event.stop()

    @on(Input.Submitted, "#picker-search")
    def _submitted(self, event: Input.Submitted) -> None:
        options = self.query_one("#picker-list", OptionList)
        typed = event.value.strip()
        if self.shown and options.highlighted is not None and options.display:
            self.dismiss(self.shown[options.highlighted].id)
        elif self.free_text and typed and (self.loaded or self.unavailable is not None):
            self.dismiss(typed)

    @on(OptionList.OptionSelected, "#picker-list")
    def _clicked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
