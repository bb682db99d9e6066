"""The multi-line prompt with slash-command completion and input history.

Enter sends, ctrl+j (or shift+enter where the terminal reports it) inserts a
newline, up/down walk earlier prompts while the prompt is empty or still shows
a recalled one. Typing `/` opens a small menu of matching commands: up/down
move through it, Tab or Enter takes the highlighted one, Esc closes it. A word
starting with `@` opens the same menu with matching paths (newt.ui.widgets.
path_completion). After /edit the bar is "editing": sending replaces the last
turn; emptying the bar ends it.
"""

from __future__ import annotations

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

from newt.ui.commands import SlashCommand, completions
from newt.ui.widgets.path_completion import PATH_OPTION, path_options, take_path

NEWLINE_KEYS = ("ctrl+j", "shift+enter", "alt+enter")
HISTORY_LIMIT = 500


class PromptArea(TextArea):
    """TextArea whose Enter submits (the bar decides what submitting means)."""

    class Submit(Message):
        pass

    class Navigate(Message):
        """up/down/tab/escape the bar may want to use (menu or history)."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key
            self.handled = False

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.post_message(self.Submit())
            return
        if event.key in NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            start, end = self.selection
            self._replace_via_keyboard("\n", start, end)
            return
        if event.key in ("up", "down", "tab", "escape"):
            bar = self.parent
            if isinstance(bar, PromptBar) and bar.navigate(event.key):
                event.stop()
                event.prevent_default()
                return
        await super()._on_key(event)


class PromptBar(Vertical):
    """Slash menu + prompt; posts `Submitted` with the text to send or run."""

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.history: list[str] = []
        self._history_pos: int | None = None  # index into history while recalling
        self._recalled: str | None = None
        self.editing = False

    def compose(self) -> ComposeResult:
        menu = OptionList(id="slash-menu")
        menu.can_focus = False  # focus stays in the prompt; keys are forwarded
        menu.display = False
        yield menu
        area = PromptArea(
            id="prompt-area",
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            compact=True,
            placeholder="Message newt — Enter sends, ctrl+j newline, / for commands",
        )
        yield area

    @property
    def area(self) -> PromptArea:
        return self.query_one(PromptArea)

    @property
    def menu(self) -> OptionList:
        return self.query_one("#slash-menu", OptionList)

    @property
    def text(self) -> str:
        return self.area.text

    def set_text(self, text: str) -> None:
        area = self.area
        area.load_text(text)
        area.move_cursor(area.document.end)
        self._close_menu()
        if not text:
            self.stop_editing()

    def start_editing(self, text: str) -> None:
        self.set_text(text)
        self.editing = True
        self.set_class(True, "-editing")
        self.area.border_title = "editing the last prompt · Enter replaces it · empty to cancel"
        self.focus_prompt()

    def stop_editing(self) -> None:
        if self.editing:
            self.editing = False
            self.set_class(False, "-editing")
            self.area.border_title = None

    def focus_prompt(self) -> None:
        self.area.focus()

    def clearable(self) -> bool:
        """ctrl+c may clear the prompt: it holds text, has the focus and no selection."""
        area = self.area
        return bool(area.text) and area.has_focus and area.selection.is_empty

    def clear_input(self) -> None:
        """Empty the prompt in one edit, however long (ctrl+z brings it back)."""
        area = self.area
        area.replace("", area.document.start, area.document.end)
        self._history_pos = self._recalled = None

    def remember(self, text: str) -> None:
        if text.strip() and (not self.history or self.history[-1] != text):
            self.history.append(text)
            del self.history[:-HISTORY_LIMIT]
        self._history_pos = None
        self._recalled = None

    # -- slash menu ---------------------------------------------------------

    def _matches(self) -> list[SlashCommand]:
        return completions(self.area.text)

    def _close_menu(self) -> None:
        self.menu.display = False
        self.set_class(False, "-menu")

    @on(TextArea.Changed, "#prompt-area")
    def _text_changed(self, event: TextArea.Changed) -> None:
        if not self.area.text:
            self.stop_editing()
        matches = self._matches()
        menu = self.menu
        if not matches:
            paths = path_options(self.area)
            if paths:
                menu.set_options(paths)
                menu.highlighted = 0
                menu.display = True
                self.set_class(True, "-menu")
                return
        exact = len(matches) == 1 and self.area.text == matches[0].title
        if not matches or exact:
            self._close_menu()
            return
        menu.set_options(
            Option(Content.assemble((c.title, "bold"), "  ", (c.help, "dim")), id=c.name)
            for c in matches
        )
        menu.highlighted = 0
        menu.display = True
        self.set_class(True, "-menu")

    def _accept_menu(self) -> SlashCommand | None:
        menu = self.menu
        if not menu.display or menu.highlighted is None:
            return None
        option = menu.get_option_at_index(menu.highlighted)
        if (option.id or "").startswith(PATH_OPTION):
            take_path(self.area, option.id or "")
            self._close_menu()
            return None
        matches = {c.name: c for c in self._matches()}
        command = matches.get(option.id or "")
        self._close_menu()
        if command is not None:
            self.set_text(command.title + (" " if command.usage else ""))
            self._close_menu()
        return command

    @on(OptionList.OptionSelected, "#slash-menu")
    def _menu_clicked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._accept_menu()
        self.focus_prompt()

    # -- keys ---------------------------------------------------------------

    def navigate(self, key: str) -> bool:
        """Handle a navigation key for the menu or history; False lets the TextArea have it."""
        menu = self.menu
        if menu.display:
            if key == "up":
                menu.action_cursor_up()
            elif key == "down":
                menu.action_cursor_down()
            elif key == "tab":
                self._accept_menu()
            elif key == "escape":
                self._close_menu()
            return True
        if key in ("up", "down"):
            return self._walk_history(-1 if key == "up" else 1)
        return False

    def _walk_history(self, step: int) -> bool:
        text = self.area.text
        if text and text != self._recalled:
            return False  # editing real text: arrows move the cursor
        if not self.history:
            return False
        pos = len(self.history) if self._history_pos is None else self._history_pos
        pos += step
        if pos < 0:
            return True
        if pos >= len(self.history):
            self._history_pos = None
            self._recalled = None
            self.area.load_text("")
            return True
        self._history_pos = pos
        self._recalled = self.history[pos]
        self.set_text(self._recalled)
        return True

    @on(PromptArea.Submit)
    def _submit(self, event: PromptArea.Submit) -> None:
        event.stop()
        if self.menu.display:
            command = self._accept_menu()
            # A command that takes no argument runs at once; others wait for it
            # (and a completed path waits for the rest of the prompt).
            if command is None or command.arg_required:
                return
        text = self.area.text
        if not text.strip():
            return
        self.post_message(self.Submitted(text))
