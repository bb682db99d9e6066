"""The user's own memory from the chat screen: the memory view,
/recall, /incognito, and the resume picker's rename and delete.

Mixed into ChatCommands. After a forget or a delete the session has already
reloaded what it holds (a forgotten message reads "[forgotten]", a deleted
open conversation leaves it on a fresh one), so `reshow` draws the log again
from the session, as /resume and /new do.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from newt.agent.own_memory.records import ForgetReport
    from newt.ui.command_host import CommandHost
    from newt.ui.session_api import SessionLike

MEMORY_USAGE = "Usage: /memory (the panel) | /memory search [QUERY] (the memory view)"


def incognito_said(on: bool, report: ForgetReport | None, *, left_unsaved: bool = False) -> str:
    """What /incognito and the settings checkbox say they did. `left_unsaved`:
    turning it off left a conversation that was never saved (a new one starts)."""
    if not on:
        if left_unsaved:
            return (
                "Incognito off: the incognito conversation was not saved and is gone;"
                " this new one is saved and memory holds it."
            )
        return "Incognito off: memory holds this conversation again from its next message."
    sent = " What you send still goes to the model's server."
    if report is None:
        return (
            "Incognito: nothing of this conversation is saved (not on disk, not in memory),"
            " nor of the ones /new starts until /incognito off." + sent
        )
    first = report.describe().splitlines()[0]
    return (
        "Incognito: nothing of this conversation is saved from now on; what was stored"
        f" of it is deleted ({first})." + sent
    )


class MemoryChatCommands:
    screen: CommandHost

    @property
    def session(self) -> SessionLike:
        raise NotImplementedError

    def spawn(self, work: Awaitable[None]) -> None:
        raise NotImplementedError

    # -- drawing the chat again ------------------------------------------------------

    async def reshow(self) -> None:
        """Draw the log from the session: its conversation's durable log, or
        an empty log when it is on a fresh one (the open one was deleted)."""
        screen = self.screen
        if self.session.conversation is None:
            await screen.log_view.replace_all([])
            screen.sidebar.show(None)
            screen.refresh_header()
            screen.refresh_meter()
            return
        loading = screen.load_conversation()
        with contextlib.suppress(Exception):  # what is said next goes below the history
            await loading.wait()

    async def after_forget(self, report: ForgetReport) -> None:
        """The memory view forgot something: the log shows what is left, and says what went."""
        await self.reshow()
        self.screen.feedback(report.describe())

    # -- the memory view and /recall --------------------------------------------------

    def open_memory_view(self, arg: str) -> None:
        """`/memory search [QUERY]` and the palette's "Search memory"."""
        verb, _, query = arg.partition(" ")
        if verb.lower() != "search":
            self.screen.feedback(MEMORY_USAGE, "warning")
            return
        if self.screen.busy:
            self.screen.notify("The memory view waits until the reply finishes (Esc stops it).")
            return
        from newt.ui.screens.memory_browser import MemoryBrowserScreen  # brings the agent's

        view = MemoryBrowserScreen(self.session, query.strip(), after_forget=self.after_forget)
        self.screen.app.push_screen(view)

    async def cmd_recall(self, arg: str) -> None:
        report, _block = await self.session.turns.recall_preview(arg)
        from newt.ui.screens.recall_preview import RecallPreviewScreen

        self.screen.app.push_screen(RecallPreviewScreen(arg, report, self.session.fetch_record))

    # -- incognito --------------------------------------------------------------------

    async def cmd_incognito(self, arg: str) -> None:
        choice = arg.strip().lower()
        if choice not in ("", "on", "off"):
            self.screen.feedback("Usage: /incognito [on|off] (no argument toggles)", "warning")
            return
        on = not self.session.incognito if not choice else choice == "on"
        await self.set_incognito(on)

    async def set_incognito(self, on: bool) -> None:
        was_unsaved = self.session.unsaved and self.session.conversation is not None
        report = await self.session.forgetting.set_incognito(on)
        left_unsaved = not on and was_unsaved
        if left_unsaved:  # the session went on to a fresh conversation
            await self.reshow()
        self.screen.refresh_header()
        self.screen.refresh_meter()
        self.screen.feedback(incognito_said(on, report, left_unsaved=left_unsaved))

    # -- the resume picker's rename and delete ---------------------------------------

    async def rename_conversation(self, conv_id: str, title: str) -> str:
        conv = await self.session.conversations.rename_conversation(conv_id, title)
        self.screen.refresh_header()
        return f"Renamed to “{conv.title}”."

    async def delete_conversation(self, conv_id: str) -> str:
        """Delete it and say what went; the open one leaves the chat on a fresh one."""
        current = self.session.conversation
        was_open = current is not None and current.id == conv_id
        conv, report = await self.session.forgetting.delete_conversation(conv_id)
        if was_open:
            await self.reshow()
        else:
            self.screen.refresh_header()
            self.screen.refresh_meter()  # its notes may have gone from the prompt
        said = f"Deleted “{conv.title or conv.id[:8]}”:\n{report.describe()}"
        if was_open:
            said += "\nThis chat goes on in a new conversation."
        self.screen.feedback(said)
        return said
