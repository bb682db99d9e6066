"""Forgotten words out of every turn's tool events: the copies a tool made of them.

A `recall_memory` or `fetch_record` call copies records into its result, and
the turn keeps its tool events (name, arguments, result) for the screen and
exports. So a forgotten message lives on in the tool events of any later turn
whose call quoted it, whole or as an excerpt, and in the arguments that
searched for it. `scrub_tool_events` forgets every event holding `phrase` or
any run of SHINGLE words of a forgotten text (the whole text when it is
shorter), case and spacing aside: its arguments and result become FORGOTTEN,
its tool's name stays (the log keeps its shape). Why shingles: an excerpt is
cut to the stretch that best matched its query, so it holds a run of the
text's words, not the text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from newt.store.db import Database, fetch_all
from newt.store.forgotten import FORGOTTEN

SHINGLE = 5  # words in a run: long enough not to match what merely shares words


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


class _Quotes:
    """Tells whether a string quotes any of the forgotten texts or holds the phrase."""

    def __init__(self, texts: Sequence[str], phrase: str) -> None:
        self.whole = [" ".join(_words(t)) for t in texts if 0 < len(_words(t)) < SHINGLE]
        if phrase and _words(phrase):
            self.whole.append(" ".join(_words(phrase)))
        self.runs = {
            tuple(words[i : i + SHINGLE])
            for words in (_words(t) for t in texts)
            for i in range(len(words) - SHINGLE + 1)
        }

    def __bool__(self) -> bool:
        return bool(self.whole or self.runs)

    def found_in(self, value: str) -> bool:
        words = _words(value)
        said = f" {' '.join(words)} "
        if any(f" {w} " in said for w in self.whole):
            return True
        return any(tuple(words[i : i + SHINGLE]) in self.runs for i in range(len(words)))

    def quoted_by(self, value: Any) -> bool:
        if isinstance(value, str):
            return self.found_in(value)
        if isinstance(value, list):
            return any(self.quoted_by(v) for v in value)
        if isinstance(value, dict):
            return any(self.quoted_by(v) for v in value.values())
        return False


def _blank(value: Any, keep: str = "") -> Any:
    """Every string of an event forgotten but its tool's name (what it looked up went)."""
    if isinstance(value, str):
        return FORGOTTEN
    if isinstance(value, list):
        return [_blank(v) for v in value]
    if isinstance(value, dict):
        return {k: v if k == keep else _blank(v) for k, v in value.items()}
    return value


async def scrub_tool_events(db: Database, texts: Sequence[str], phrase: str = "") -> int:
    """Replace every tool-event string quoting a forgotten text or holding
    `phrase`, in every turn; returns how many turns changed. The caller
    scrubs the file after (newt.store.scrub)."""
    quotes = _Quotes([t for t in texts if t and t != FORGOTTEN], phrase)
    if not quotes:
        return 0
    changed = 0
    async with db.transaction() as conn:
        rows = await fetch_all(conn, "SELECT id, tool_events FROM turns WHERE tool_events != '[]'")
        for turn_id, raw in rows:
            events = json.loads(raw or "[]")
            cleaned = [
                _blank(e, keep="name") if isinstance(e, dict) and quotes.quoted_by(e) else e
                for e in events
            ]
            if cleaned != events:
                await conn.execute(
                    "UPDATE turns SET tool_events = ? WHERE id = ?", (json.dumps(cleaned), turn_id)
                )
                changed += 1
    return changed
