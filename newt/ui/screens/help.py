"""/help: the slash commands and keys."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from newt.ui.commands import COMMANDS

KEYS = (
    ("enter", "send the message"),
    ("ctrl+j", "new line in the prompt"),
    ("up / down", "earlier prompts (when the prompt is empty)"),
    ("escape / ctrl+c", "stop the reply in flight (the partial text is kept)"),
    ("ctrl+c", "no reply in flight: clear the prompt (ctrl+z brings it back)"),
    ("ctrl+p", "command palette"),
    ("shift+tab", "from the prompt: focus the newest message (up/down or k/j move)"),
    ("c", "on a focused message: copy it to the clipboard"),
    ("1 … 9", "on a focused message: copy its code block N"),
    ("//text", "send a message that starts with a slash"),
    ("r / d", "in /resume (from the list: down arrow): rename / delete the conversation"),
    ("f / F", "in the memory view: forget the record / every record matching the search"),
    ("ctrl+x", "in the memory view, from the list: forget everything (type forget)"),
)
MEMORY_VIEW = "Search memory (ctrl+p) or /memory search [QUERY] opens the memory view."


def help_text() -> Content:
    parts: list[Content | str | tuple[str, str]] = [("Commands\n", "bold")]
    for c in COMMANDS:
        usage = f" {c.usage}" if c.usage else ""
        key = f"  [{c.key}]" if c.key else ""
        parts += [(f"  /{c.name}{usage}", "bold"), f"\n      {c.help}", (key, "dim"), "\n"]
    parts += [("\n" + MEMORY_VIEW + "\n", "dim")]
    parts.append(("\nKeys\n", "bold"))
    for key, what in KEYS:
        parts += [(f"  {key:<12}", "bold"), f"{what}\n"]
    return Content.assemble(*parts)


class HelpScreen(ModalScreen[None]):
    CSS_PATH = "help.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,f1", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="panel") as panel:
            panel.border_title = "Help"
            panel.border_subtitle = "esc to close"
            yield Static(help_text())
