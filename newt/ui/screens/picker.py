"""The /resume picker: search saved conversations by title and content."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
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

from newt.agent.views import ConversationView as Conversation
from newt.ui.format import ago, one_line

Search = Callable[[str], Awaitable[Sequence[Conversation]]]
SEARCH_DELAY = 0.15  # debounce: one query per pause in typing, not per key


def conversation_prompt(conv: Conversation, current: bool) -> Content:
    title = one_line(conv.title or "(untitled)", 60)
    mark = "● " if current else "  "
    parent = getattr(conv, "parent_title", None)
    forked = getattr(conv, "parent_id", None)
    fork = ("\n  ↳ fork of " + one_line(parent or forked[:8], 50), "$secondary") if forked else ""
    return Content.assemble(
        (mark, "$accent"),
        (title, "bold"),
        fork,
        "\n  ",
        (
            f"{conv.id[:8]} · {conv.turn_count} turn{'s' if conv.turn_count != 1 else ''}"
            f" · {conv.model or 'model?'} · {ago(conv.updated_at)}",
            "dim",
        ),
    )


class PickerScreen(ModalScreen[str | None]):
    """Dismisses with the chosen conversation id, or None."""

    CSS_PATH = "picker.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Close")]

    def __init__(self, search: Search, current_id: str | None = None) -> None:
        super().__init__()
        self._search = search
        self._current_id = current_id
        self.results: list[Conversation] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="panel") as panel:
            panel.border_title = "Resume a conversation"
            panel.border_subtitle = "enter opens · esc closes"
            yield Input(placeholder="Search titles and content…", id="picker-search")
            yield OptionList(id="picker-list")
            yield Static("", id="picker-status")

    def on_mount(self) -> None:
        self.query_one("#picker-list", OptionList).can_focus = False
        self.run_search("", delay=0)

    @on(Input.Changed, "#picker-search")
    def _changed(self, event: Input.Changed) -> None:
        self.run_search(event.value)

    @work(exclusive=True, group="picker-search", exit_on_error=False)
    async def run_search(self, text: str, delay: float = SEARCH_DELAY) -> None:
        if delay:
            await asyncio.sleep(delay)
        status = self.query_one("#picker-status", Static)
        try:
            found = await self._search(text)
        except Exception as exc:
            status.update(Content(f"Search failed: {exc}"))
            return
        self.results = list(found)
        options = self.query_one("#picker-list", OptionList)
        options.clear_options()
        options.add_options(
            Option(conversation_prompt(c, c.id == self._current_id), id=c.id) for c in found
        )
        if found:
            options.highlighted = 0
        noun = "conversation" if len(found) == 1 else "conversations"
        status.update(
            Content(f"{len(found)} {noun}" + (f" matching “{text}”" if text.strip() else ""))
            if found
            else ("No conversation matches." if text.strip() else "No saved conversations yet.")
        )

    def on_key(self, event: Key) -> None:
        # Focus stays in the search box; arrows move the list.
        options = self.query_one("#picker-list", OptionList)
        if event.key == "down":
            options.action_cursor_down()
            event.stop()
        elif event.key == "up":
            options.action_cursor_up()
            event.stop()
        elif event.key in ("pagedown", "pageup"):
            getattr(options, f"action_page_{event.key[4:]}")()
            event.stop()

    @on(Input.Submitted, "#picker-search")
    def _submitted(self, event: Input.Submitted) -> None:
        options = self.query_one("#picker-list", OptionList)
        if options.highlighted is not None and self.results:
            self.dismiss(self.results[options.highlighted].id)

    @on(OptionList.OptionSelected, "#picker-list")
    def _clicked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
