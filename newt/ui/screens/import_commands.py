"""Importing history from the chat screen: `/import` and the palette's
"Import conversations…" open the import screen; `/import PATH` imports at once.

Mixed into ChatCommands. The import runs in the chat screen's worker (never the
import screen's, so closing that screen does not stop it) through
newt.agent.history_import, and ends with the summary `newt import` prints, in the
import screen when it is open, in the log and as a notification. A malformed file
ends in its error and "nothing was imported", and nothing is.
"""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING

from newt.ui.errors import describe

if TYPE_CHECKING:
    from newt.ui.command_host import CommandHost
    from newt.ui.screens.import_history import ImportScreen
    from newt.ui.session_api import SessionLike


class ImportCommands:
    screen: CommandHost
    importing: bool = False
    """An import is running (one at a time: they would share the store's writer)."""

    @property
    def session(self) -> SessionLike:
        raise NotImplementedError

    def spawn(self, work: Awaitable[None]) -> None:
        raise NotImplementedError

    def open_import(self) -> None:
        from newt.agent.history_import import found_databases  # brings the importers
        from newt.ui.screens.import_history import ImportScreen

        self.screen.app.push_screen(ImportScreen(found_databases(), self.begin_import))

    def begin_import(self, path: Path, source: str | None, view: ImportScreen | None) -> None:
        if self.importing:
            if view is not None:
                view.failed("An import is already running; wait for its summary.")
            else:
                self.screen.feedback("An import is already running.", "warning")
            return
        self.importing = True
        self.spawn(self.import_path(path, source, view))

    async def cmd_import(self, arg: str) -> None:
        """`/import PATH` (no PATH opens the screen, in ChatCommands.open_panel)."""
        self.begin_import(Path(arg).expanduser(), None, None)

    async def import_path(self, path: Path, source: str | None, view: ImportScreen | None) -> None:
        from newt.agent.history_import import ImportFormatError

        screen = self.screen
        if view is None:
            screen.feedback(f"Importing {path}…", "info")
        progress = view.progress if view is not None else None
        try:
            report = await self.session.import_history(path, source=source, progress=progress)
        except ImportFormatError as exc:  # a malformed or unknown file: nothing was written
            said = f"Import failed: {describe(exc)}; nothing was imported."
            if view is not None:
                view.failed(said)
            screen.feedback(said, "warning")
            return
        except BaseException:
            if view is not None:
                view.failed("Import stopped; what was written before is kept.")
            raise
        finally:
            self.importing = False
        lines = report.lines()
        if view is not None:
            view.finished(lines)
        screen.feedback("\n".join(lines))
        screen.notify("\n".join(lines), title="Import", timeout=10, markup=False)
