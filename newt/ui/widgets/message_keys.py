"""Keys on a focused message: copy it or one of its code blocks, move to the next.

Messages take focus (shift+tab from the prompt reaches the newest, a click
focuses one). Then `c` copies the message, `1`-`9` its code blocks, up/down
(or k/j) move between messages, and down past the newest returns to the
prompt.
"""

from __future__ import annotations

from typing import Any

from textual.binding import Binding, BindingType
from textual.widget import Widget

from newt.ui.copying import lines, pick_code
from newt.ui.tmux_clipboard import copy_in_tmux

MESSAGE_BINDINGS: list[BindingType] = [
    Binding("c", "copy_message", "Copy message"),
    Binding("1", "copy_code(1)", "Copy code block 1"),
    *(Binding(str(n), f"copy_code({n})", f"Copy code block {n}", show=False) for n in range(2, 10)),
    Binding("up,k", "neighbour(-1)", "Previous message", show=False),
    Binding("down,j", "neighbour(1)", "Next message", show=False),
]


def copy_text(node: Any, text: str, what: str) -> None:
    """Put `text` on the clipboard (OSC 52) and say where it went: inside tmux
    also in tmux's own buffer (ui/tmux_clipboard.py), since tmux's default
    `set-clipboard external` drops OSC 52 from applications."""
    node.app.copy_to_clipboard(text)
    in_tmux = copy_in_tmux(text, what)
    if in_tmux is None:
        node.notify(f"Copied {what}.", title="Copy", timeout=3, markup=False)
        return
    message, copied = in_tmux
    severity = "information" if copied else "warning"
    node.notify(message, title="Copy", severity=severity, timeout=6, markup=False)


class MessageKeys:
    """Mixed into message widgets; `copy_source` is the text `c` copies."""

    copy_label = "the message"

    def copy_source(self) -> str:
        raise NotImplementedError

    def action_copy_message(self) -> None:
        text = self.copy_source()
        if not text.strip():
            self._widget.notify("This message has no text to copy.", severity="warning")
            return
        copy_text(self._widget, text, f"{self.copy_label} ({lines(text)})")

    def action_copy_code(self, number: int) -> None:
        try:
            code, what = pick_code(self.copy_source(), number, self.copy_label)
        except ValueError as exc:
            self._widget.notify(str(exc), severity="warning", markup=False)
            return
        copy_text(self._widget, code, what)

    def action_neighbour(self, step: int) -> None:
        me = self._widget
        parent = me.parent
        if parent is None:
            return
        messages = [w for w in parent.children if w.focusable and w.display]
        index = messages.index(me) + step if me in messages else -1
        if 0 <= index < len(messages):
            messages[index].focus()
            messages[index].scroll_visible(animate=False)
        elif step > 0:  # past the newest message: back to writing
            prompt = me.screen.query("#prompt-area")
            if prompt:
                prompt.first().focus()

    @property
    def _widget(self) -> Widget:
        assert isinstance(self, Widget)
        return self
