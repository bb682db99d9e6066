"""Startup screens: connecting, and a fatal problem the user has to act on."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Button, LoadingIndicator, Static


class ConnectingScreen(Screen[None]):
    CSS_PATH = "status.tcss"

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what

    def compose(self) -> ComposeResult:
        with Vertical(id="panel"):
            yield LoadingIndicator()
            yield Static(Content(self.what), id="status-text")

    def say(self, what: str) -> None:
        self.what = what
        if self.is_mounted:  # before compose, `what` is picked up there
            self.query_one("#status-text", Static).update(Content(what))


class ErrorScreen(Screen[str]):
    """Dismisses with 'retry', 'setup' or 'quit'."""

    CSS_PATH = "status.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "dismiss('retry')", "Retry"),
        Binding("q,escape", "dismiss('quit')", "Quit"),
    ]

    def __init__(self, title: str, message: str, *, can_retry: bool = True) -> None:
        super().__init__()
        self.title_text = title
        self.message = message
        self.can_retry = can_retry

    def compose(self) -> ComposeResult:
        with Vertical(id="panel", classes="error") as panel:
            panel.border_title = self.title_text
            yield Static(Content(self.message), id="status-text")
            with Horizontal(id="status-buttons"):
                if self.can_retry:
                    yield Button("Retry", variant="primary", id="retry")
                    yield Button("Change backend", id="setup")
                yield Button("Quit", id="quit")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id or "quit")
