"""The /resume picker: search saved conversations by title and content;
rename (r) or delete (d) the highlighted one.

Focus starts in the search box; the arrow keys take it to the list, where
r and d act and any other letter goes back to the search. After a rename or
a delete the focus is on the list again. Deleting asks
once and says what went (newt.agent.own_memory.records's ForgetReport).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.events import Key
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from newt.agent.display import ConversationView as Conversation
from newt.ui.errors import describe
from newt.ui.format import ago, one_line
from newt.ui.screens.confirm import AskScreen, ConfirmScreen

Search = Callable[[str], Awaitable[Sequence[Conversation]]]
Rename = Callable[[str, str], Awaitable[str]]
"""(conversation id, new title) -> what to say; raises with the reason."""
Delete = Callable[[str], Awaitable[str]]
"""conversation id -> what went, as the notice says it."""
SEARCH_DELAY = 0.15  # debounce: one query per pause in typing, not per key


def conversation_prompt(conv: Conversation, current: bool) -> Content:
    title = one_line(conv.title or "(untitled)", 60)
    mark = "● " if current else "  "
    forked, parent = conv.parent_id, conv.parent_title
    fork = ("\n  ↳ fork of " + one_line(parent or forked[:8], 50), "$secondary") if forked else ""
    return Content.assemble(
        (mark, "$accent"),
        (title, "bold"),
        fork,
        "\n  ",
        (
            f"{conv.id[:8]} · {messages(conv.message_count)}"
            f" · {conv.model or 'model?'} · {ago(conv.updated_at)}",
            "dim",
        ),
    )


def messages(n: int) -> str:
    """A conversation's size as every count of it says it: the messages it
    shows, the user's and the replies (store.forgotten.SHOWN_MESSAGES)."""
    return f"{n} message{'s' if n != 1 else ''}"


def delete_details(conv: Conversation) -> list[str]:
    """What deleting `conv` takes, as the confirmation lists it (in the words
    of the report that follows: "forgot 1 conversation, 6 messages, …")."""
    n = conv.message_count
    return [
        f"its {messages(n)} and the memory records and vectors made from"
        f" {'them' if n != 1 else 'it'}",
        "its summaries, its settings and the notes saved in it",
        "a fork of it keeps its own copy of what it shares",
    ]


class PickerScreen(ModalScreen[str | None]):
    """Dismisses with the chosen conversation id, or None. With `rename` and
    `delete`, r and d act on the highlighted conversation and the list is
    searched again after each."""

    CSS_PATH = "picker.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Close"),
        Binding("r", "rename", "Rename"),
        Binding("d", "delete", "Delete"),
    ]

    def __init__(
        self,
        search: Search,
        current_id: str | None = None,
        *,
        rename: Rename | None = None,
        delete: Delete | None = None,
    ) -> None:
        super().__init__()
        self._search = search
        self._current_id = current_id
        self._rename = rename
        self._delete = delete
        self.results: list[Conversation] = []
        self.notice = ""
        """What the last rename or delete said (shown under the count)."""
        self._pending_move: str | None = None
        """An arrow pressed in the search box before the list had any rows:
        applied when they arrive, so one press always moves the selection."""

    def compose(self) -> ComposeResult:
        with Vertical(id="panel") as panel:
            panel.border_title = "Resume a conversation"
            keys = ["enter opens"]
            if self._rename is not None:
                keys.append("r renames")
            if self._delete is not None:
                keys.append("d deletes")
            panel.border_subtitle = " · ".join([*keys, "esc closes"])
            yield Input(placeholder="Search titles and content…", id="picker-search")
            yield OptionList(id="picker-list")
            yield Static("", id="picker-status")

    def on_mount(self) -> None:
        self.run_search("", delay=0)

    @property
    def search_box(self) -> Input:
        return self.query_one("#picker-search", Input)

    def highlighted(self) -> Conversation | None:
        options = self.query_one("#picker-list", OptionList)
        index = options.highlighted
        if index is None or not 0 <= index < len(self.results):
            return None
        return self.results[index]

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
        options = self.query_one("#picker-list", OptionList)
        keep = self.highlighted()
        self.results = list(found)
        options.clear_options()
        options.add_options(
            Option(conversation_prompt(c, c.id == self._current_id), id=c.id) for c in found
        )
        if found:
            ids = [c.id for c in found]
            options.highlighted = ids.index(keep.id) if keep is not None and keep.id in ids else 0
            move, self._pending_move = self._pending_move, None
            if move is not None and self.focused is self.search_box:
                getattr(options, f"action_{move}")()
                self.set_focus(options)
        noun = "conversation" if len(found) == 1 else "conversations"
        line = (
            f"{len(found)} {noun}" + (f" matching “{text}”" if text.strip() else "")
            if found
            else ("No conversation matches." if text.strip() else "No saved conversations yet.")
        )
        status.update(Content("\n".join(x for x in (self.notice, line) if x)))

    def on_key(self, event: Key) -> None:
        options = self.query_one("#picker-list", OptionList)
        if self.focused is self.search_box and not options.option_count:
            moves = {"down": "cursor_down", "up": "cursor_up"}
            if event.key in moves:  # the rows are still being searched for
                self._pending_move = moves[event.key]
                event.stop()
                return
        list_keys(self, event, self.search_box, options, acting=("r", "d"))

    @on(Input.Submitted, "#picker-search")
    def _submitted(self, event: Input.Submitted) -> None:
        options = self.query_one("#picker-list", OptionList)
        if options.highlighted is not None and self.results:
            self.dismiss(self.results[options.highlighted].id)

    @on(OptionList.OptionSelected, "#picker-list")
    def _clicked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    # -- rename and delete ---------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "rename":
            return self._rename is not None
        if action == "delete":
            return self._delete is not None
        return True

    def action_rename(self) -> None:
        conv = self.highlighted()
        if conv is None or self._rename is None:
            return
        ask = AskScreen("Rename", "New title for this conversation", conv.title)
        self.app.push_screen(ask, lambda title: self._renamed(conv.id, title))

    def _renamed(self, conv_id: str, title: str | None) -> None:
        if title is not None and self._rename is not None:
            rename = self._rename
            self._act(lambda: rename(conv_id, title))

    def action_delete(self) -> None:
        conv = self.highlighted()
        if conv is None or self._delete is None:
            return
        title = one_line(conv.title or "(untitled)", 60)
        ask = ConfirmScreen(
            f"Delete “{title}”? y/n", ["This goes for good:", *delete_details(conv)]
        )
        self.app.push_screen(ask, lambda yes: self._deleting(conv.id, yes))

    def _deleting(self, conv_id: str, yes: bool | None) -> None:
        if yes and self._delete is not None:
            delete = self._delete
            if conv_id == self._current_id:
                self._current_id = None  # the chat goes on in a fresh conversation
            self._act(lambda: delete(conv_id))

    @work(exclusive=True, group="picker-change", exit_on_error=False)
    async def _act(self, change: Callable[[], Awaitable[str]]) -> None:
        try:
            self.notice = await change()
        except Exception as exc:  # the reason shows in the picker; the app goes on
            self.notice = describe(exc)
        # Back to the list, where r, d and the arrows act: in the search box the
        # next d typed a "d" into the search instead of deleting.
        options = self.query_one("#picker-list", OptionList)
        self.set_focus(options if options.option_count else self.search_box)
        self.run_search(self.search_box.value, delay=0)


def list_keys(
    screen: ModalScreen[Any],
    event: Key,
    search: Input,
    options: OptionList,
    *,
    acting: Collection[str],
) -> None:
    """A search box over a list: from the box the arrows move the list and
    take the focus there (where the screen's letter keys act); from the list
    any printable key but the screen's own (`acting`) goes back to the box
    as typed.
    Why: letters must both search and act, and never both at once."""
    if screen.focused is search:
        if event.key in ("down", "up", "pagedown", "pageup"):
            action = {"down": "cursor_down", "up": "cursor_up"}.get(event.key)
            getattr(options, f"action_{action or 'page_' + event.key[4:]}")()
            if options.option_count:
                screen.set_focus(options)  # now, not after a refresh: the next key may be queued
            event.stop()
        return
    if screen.focused is options and event.is_printable and event.character:
        if event.character in acting:
            return
        screen.set_focus(search)
        search.insert_text_at_cursor(event.character)
        event.stop()
