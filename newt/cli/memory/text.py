"""How the memory commands print model text: escapes stripped, cut to a column, dated.

Titles, excerpts and records are the model's (or an imported app's) words, so
they may hold terminal escape sequences; nothing reaches the terminal unstripped.
"""

from __future__ import annotations

import time

from newt.text import strip_terminal_escapes


def clean(text: str) -> str:
    return strip_terminal_escapes(text)


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


def records(n: int) -> str:
    return f"{n} memory record" + ("" if n == 1 else "s")
