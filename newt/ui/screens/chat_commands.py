"""The slash-command handlers that talk to the session (one `cmd_<name>` each).

`ChatScreen.run_command` is the dispatcher; it runs these in a worker so a
slow database or backend never blocks the screen's message queue.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from newt.ui.format import tokens
from newt.ui.session_api import SessionLike
from newt.ui.widgets.entries import CompactionEntry, compaction_summary

if TYPE_CHECKING:
    from newt.ui.screens.chat import ChatScreen


def export_path(title: str, conv_id: str, fmt: str, directory: Path) -> Path:
    """A new file in `directory` named after the conversation; never overwrites."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40] or "conversation"
    stem = f"newt-{conv_id[:8]}-{slug}"
    path = directory / f"{stem}.{fmt}"
    n = 1
    while path.exists():
        path = directory / f"{stem}-{n}.{fmt}"
        n += 1
    return path


class ChatCommands:
    """`cmd_<name>(arg)` for each command that talks to the session."""

    def __init__(self, screen: ChatScreen) -> None:
        self.screen = screen

    @property
    def session(self) -> SessionLike:
        return self.screen.session

    async def cmd_new(self, arg: str) -> None:
        await self.session.new_conversation()
        await self.screen.log_view.replace_all([])
        self.screen.sidebar.show(None)
        self.screen.refresh_header()
        self.screen.refresh_meter()
        self.screen.notify("New conversation.", timeout=2)

    async def cmd_resume(self, arg: str) -> None:
        conv = await self.session.resume(arg)
        self.screen.load_conversation()
        self.screen.notify(f"Resumed “{conv.title or conv.id[:8]}”.", timeout=3, markup=False)

    async def cmd_note(self, arg: str) -> None:
        if not arg:
            self.screen.feedback(
                "Usage: /note <text> | replace <old> => <new> | remove <text> | list"
            )
            return
        self.screen.feedback(await self.session.note(arg))
        self.screen.refresh_meter()

    async def cmd_compact(self, arg: str) -> None:
        self.screen.feedback("Compacting…", "info")
        result = await self.session.compact(arg or None)
        if result is None:
            self.screen.feedback("Nothing to compact yet: every turn still fits.")
        else:
            await self.screen.log_view.append(
                CompactionEntry(compaction_summary(result.record), result.resident_turns)
            )
            self.screen.feedback(
                f"Compacted: {result.resident_turns} turn(s) resident, "
                f"{tokens(result.used_after)} tokens used."
            )
        self.screen.refresh_meter()

    async def cmd_model(self, arg: str) -> None:
        if not arg:
            self.screen.feedback(
                f"Model: {self.session.model} at {self.session.base_url}. "
                "Use /model NAME to switch."
            )
            return
        await self.session.set_model(arg)
        self.screen.refresh_header()
        self.screen.refresh_meter()
        self.screen.feedback(f"Model set to {self.session.model}.")

    async def cmd_export(self, arg: str) -> None:
        fmt = (arg or "md").lower().lstrip(".")
        if fmt not in ("md", "json"):
            self.screen.feedback("Usage: /export [md|json]", "warning")
            return
        conv = self.session.conversation
        if conv is None:
            self.screen.feedback("Nothing to export yet.", "warning")
            return
        text = await self.session.export(fmt)
        path = export_path(conv.title, conv.id, fmt, Path.cwd())
        path.write_text(text, encoding="utf-8")
        self.screen.notify(f"Exported to {path}", title="Export", timeout=6, markup=False)
        self.screen.feedback(f"Exported to {path}")
