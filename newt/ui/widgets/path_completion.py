"""`@path` completion for the prompt bar: the word at the cursor, its matches.

The matches come from newt.agent.turn.attachments.complete_path (relative to the
working directory, `~` expanded); taking one replaces the word being typed,
and a directory keeps the menu open for its entries.
"""

from __future__ import annotations

import re
from pathlib import Path

from textual.content import Content
from textual.widgets import TextArea
from textual.widgets.option_list import Option

PATH_OPTION = "@path:"
_WORD = re.compile(r'(?:^|(?<=\s))@([^\s"]*)$')


def _word_at_cursor(area: TextArea) -> tuple[int, int, str] | None:
    """(row, column where the `@` is, the path typed after it) or None."""
    row, col = area.cursor_location
    line = area.document.get_line(row)[:col]
    match = _WORD.search(line)
    if match is None:
        return None
    return row, match.start(), match.group(1)


def path_options(area: TextArea) -> list[Option]:
    found = _word_at_cursor(area)
    if found is None:
        return []
    _, _, typed = found
    # Imported on first use: attachments brings hashlib (~10 ms), which the
    # first frame does not need.
    from newt.agent.turn.attachments import complete_path

    names = complete_path(typed, Path.cwd())
    if typed in names:  # a whole file name: Enter sends, the menu must not take it
        return []
    return [Option(Content.assemble(("@" + name, "bold")), id=PATH_OPTION + name) for name in names]


def take_path(area: TextArea, option_id: str) -> None:
    """Replace the `@word` at the cursor with the chosen path."""
    found = _word_at_cursor(area)
    if found is None:
        return
    row, start, _ = found
    name = option_id.removeprefix(PATH_OPTION)
    tail = "" if name.endswith("/") else " "
    area.replace("@" + name + tail, (row, start), area.cursor_location)
