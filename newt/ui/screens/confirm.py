"""Small questions asked over another screen: a yes/no (or a typed word) and
a line of text to edit.

The resume picker and the memory view ask these before they delete, forget
or rename anything: a destructive key never acts on one press alone. What
they show is cleaned and rendered as Content, never parsed as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.events import Key
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from newt.ui.format import clean


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses with True for "y" (or, with `typed`, that word typed and
    Enter), False for "n" or Esc. `details`: what goes, one line each.
    Why a typed word: forgetting everything must not be one slip of a key."""

    CSS_PATH = "confirm.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(False)", "No")]

    def __init__(
        self,
        question: str,
        details: Sequence[str] = (),
        *,
        typed: str | None = None,
        also: tuple[str, str] | None = None,
    ) -> None:
        """`also`: (key, what it does), a second way to say yes; `chose_also`
        says which yes it was."""
        super().__init__()
        self.question = question
        self.details = list(details)
        self.typed = typed
        self.also = also
        self.chose_also = False

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-panel") as panel:
            panel.border_title = "Confirm"
            yield Static(Content(clean(self.question)), id="confirm-question")
            if self.details:
                with VerticalScroll(id="confirm-details"):
                    yield Static(Content("\n".join(clean(d) for d in self.details)))
            if self.typed is None:
                other = f" · {self.also[0]} {self.also[1]}" if self.also else ""
                panel.border_subtitle = f"y yes{other} · n no"
            else:
                panel.border_subtitle = "enter confirms · esc cancels"
                yield Static(Content(f"Type {self.typed} and press Enter"), id="confirm-keys")
                yield Input(placeholder=self.typed, id="confirm-word")

    def on_mount(self) -> None:
        if self.typed is not None:
            self.query_one("#confirm-word", Input).focus()

    def key_y(self) -> None:
        if self.typed is None:
            self.dismiss(True)

    def key_n(self) -> None:
        if self.typed is None:
            self.dismiss(False)

    def on_key(self, event: Key) -> None:
        if self.also is not None and self.typed is None and event.character == self.also[0]:
            event.stop()
            self.chose_also = True
            self.dismiss(True)

    @on(Input.Submitted, "#confirm-word")
    def _word(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value.strip().lower() == (self.typed or "").lower():
            self.dismiss(True)
        else:
            self.query_one("#confirm-keys", Static).update(
                Content(f"That is not “{self.typed}”: type it to confirm, Esc cancels")
            )


class AskScreen(ModalScreen[str | None]):
    """One line to edit, prefilled: dismisses with the text on Enter, None on Esc.
    Why its own screen: the list under it keeps its search box as typed."""

    CSS_PATH = "confirm.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, title: str, label: str, value: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.label = label
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-panel") as panel:
            panel.border_title = clean(self.title_text)
            panel.border_subtitle = "enter saves · esc cancels"
            yield Static(Content(clean(self.label)), id="confirm-question")
            yield Input(clean(self.value), id="ask-input")

    def on_mount(self) -> None:
        self.query_one("#ask-input", Input).focus()

    @on(Input.Submitted, "#ask-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)
