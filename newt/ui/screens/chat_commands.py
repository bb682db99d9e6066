"""The slash-command dispatcher and its handlers (one `cmd_<name>` each).

`ChatCommands.run` is the one dispatcher for typed commands, key bindings and
the palette. Handlers that talk to the session run in a worker so a slow
database or backend never blocks the screen's message queue. Everything goes
through the CommandHost protocol: this module never imports the screen.
"""

from __future__ import annotations

import contextlib
import re
import unicodedata
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from newt.ui.command_host import CommandHost
from newt.ui.commands import ParsedCommand
from newt.ui.copying import parse_copy, resolve_copy
from newt.ui.errors import NewtError, describe
from newt.ui.format import tokens
from newt.ui.screens.help import HelpScreen
from newt.ui.screens.import_commands import ImportCommands
from newt.ui.screens.memory import MemoryScreen
from newt.ui.screens.memory_commands import MemoryChatCommands
from newt.ui.screens.model_commands import ModelCommands
from newt.ui.session_api import SessionLike
from newt.ui.widgets.entries import CompactionEntry, compaction_summary
from newt.ui.widgets.message_keys import copy_text

if TYPE_CHECKING:
    from newt.agent.session.settings import ChatSettings

# Commands that would change the conversation under a reply that is streaming
# (the session would also make them wait for its lock; refusing says why).
NOT_WHILE_BUSY = {
    "new",
    "resume",
    "compact",
    "model",
    "settings",
    "preset",
    "regenerate",
    "edit",
    "fork",
    "recall",
    "incognito",
}


def title_slug(title: str, most: int = 40) -> str:
    """`title` as a file-name part: letters and digits of any script kept
    ("tromsø", not "troms"), anything else (slashes, dots, spaces, control
    characters) one "-"; at most `most` characters, "conversation" if empty.
    Why: an export named after "Tromsø" must still say so, and never climb
    out of its directory."""
    text = unicodedata.normalize("NFC", title).casefold()
    slug = re.sub(r"-+", "-", "".join(c if c.isalnum() else "-" for c in text))
    return slug.strip("-")[:most].strip("-") or "conversation"


def export_path(title: str, conv_id: str, fmt: str, directory: Path) -> Path:
    """A new file in `directory` named after the conversation; never overwrites."""
    slug = title_slug(title)
    stem = f"newt-{conv_id[:8]}-{slug}"
    path = directory / f"{stem}.{fmt}"
    n = 1
    while path.exists():
        path = directory / f"{stem}-{n}.{fmt}"
        n += 1
    return path


class ChatCommands(ImportCommands, MemoryChatCommands, ModelCommands):
    """`run` dispatches; `cmd_<name>(arg)` for each command that talks to the session
    (/model, /settings and /preset in ModelCommands; the memory view, /recall,
    /incognito and the picker's rename and delete in MemoryChatCommands; /import in
    ImportCommands)."""

    def __init__(self, screen: CommandHost) -> None:
        self.screen = screen

    @property
    def session(self) -> SessionLike:
        return self.screen.session

    def run(self, parsed: ParsedCommand) -> None:
        screen = self.screen
        if parsed.command is None:
            screen.feedback(f"Unknown command /{parsed.name}. Type /help for the list.", "warning")
            return
        name = parsed.command.name
        if screen.busy and name in NOT_WHILE_BUSY:
            screen.notify(f"/{name} waits until the reply finishes (Esc stops it).")
            return
        # Commands that only open a panel run at once; the rest go to a worker.
        app = screen.app
        if name == "help":
            app.push_screen(HelpScreen())
        elif name == "memory" and parsed.arg:
            self.open_memory_view(parsed.arg)
        elif name == "memory":
            app.push_screen(MemoryScreen(self.session.memory_status(), screen.log_view.load_folds))
        elif name == "evidence":
            screen.toggle_sidebar()
        elif name == "thinking":
            screen.toggle_thinking()
        elif name == "copy":
            self.copy(parsed.arg)
        elif name == "quit":
            app.call_later(app.action_quit)
        elif name == "resume" and not parsed.arg:
            current = self.session.conversation.id if self.session.conversation else None
            from newt.ui.screens.picker import PickerScreen  # brings the agent's views

            picker = PickerScreen(
                self.session.conversations.search_conversations,
                current,
                rename=self.rename_conversation,
                delete=self.delete_conversation,
            )
            app.push_screen(picker, self._picked)
        elif not parsed.arg and self.open_panel(name):
            pass  # /model, /settings and /preset without an argument open their screen
        else:
            self._start(name, parsed.arg)

    def open_panel(self, name: str) -> bool:
        """/settings with the incognito checkbox, /import's screen (the rest as
        ModelCommands opens them)."""
        if name == "import":
            self.open_import()
            return True
        if name != "settings":
            return super().open_panel(name)
        from newt.ui.screens.settings import SettingsScreen, window_line  # the agent's settings

        session = self.session
        try:
            status = session.memory_status()
            window = window_line(status.context_tokens, status.budget, status.budget_source)
        except Exception:  # a figure missing: the form goes on without the line
            window = ""
        form = SettingsScreen(
            session.settings_controls.settings,
            model=session.model,
            default_prompt=session.settings_controls.default_system_prompt,
            server_cap=session.config.server_reply_cap,
            server_sampling=session.config.server_sampling,
            incognito=session.incognito,
            window=window,
        )
        self.screen.app.push_screen(form, lambda saved: self._settings_closed(form, saved))
        return True

    def _settings_closed(self, form: Any, settings: ChatSettings | None) -> None:
        if settings is not None:
            self.spawn(self._save_form(form.keep_out, settings))

    async def _save_form(self, keep_out: bool | None, settings: ChatSettings) -> None:
        if keep_out is not None and keep_out != self.session.incognito:
            await self.set_incognito(keep_out)
        await self._save_settings(settings)

    def copy(self, arg: str) -> None:
        """/copy [N] [code [M]] (see newt.ui.copying)."""
        try:
            text, what = resolve_copy(self.screen.log_view.entries, parse_copy(arg))
        except ValueError as exc:
            self.screen.feedback(str(exc), "warning")
            return
        copy_text(self.screen, text, what)

    def _picked(self, conv_id: str | None) -> None:
        if conv_id:
            self._start("resume", conv_id)

    def _start(self, name: str, arg: str) -> None:
        self.spawn(getattr(self, f"cmd_{name}")(arg))

    def spawn(self, work: Awaitable[None]) -> None:
        """Run a command's work in a worker; its errors become inline feedback.
        One of newt's errors for the user (a `NewtError`: unknown conversation,
        a note that matches twice...) ends there; anything else is a bug, said
        inline too and raised on, so the worker reports it."""
        self.screen.run_worker(self._guarded(work), group="command", exit_on_error=False)

    async def _guarded(self, work: Awaitable[None]) -> None:
        try:
            await work
        except Exception as exc:
            self.screen.feedback(describe(exc), "warning")  # beside the command
            if not isinstance(exc, NewtError):
                raise

    async def cmd_new(self, arg: str) -> None:
        await self.session.conversations.new_conversation()
        await self.screen.log_view.replace_all([])
        self.screen.sidebar.show(None)
        self.screen.refresh_header()
        self.screen.refresh_meter()
        self.screen.notify("New conversation.", timeout=2)

    async def cmd_resume(self, arg: str) -> None:
        conv = await self.session.conversations.resume(arg)
        self.screen.load_conversation()
        self.screen.notify(f"Resumed “{conv.title or conv.id[:8]}”.", timeout=3, markup=False)

    async def cmd_note(self, arg: str) -> None:
        if not arg:
            self.screen.feedback(
                "Usage: /note <text> | replace <old> => <new> | remove <text> | list"
            )
            return
        self.screen.feedback(await self.session.memory_commands.note(arg))
        self.screen.refresh_meter()

    async def cmd_compact(self, arg: str) -> None:
        self.screen.feedback("Folding older turns into the summary…", "info")
        result = await self.session.memory_commands.compact(arg or None)
        if result is None:
            self.screen.feedback("Nothing to fold yet: every turn still fits.")
        else:
            await self.screen.log_view.append(
                CompactionEntry(compaction_summary(result.record), result.resident_turns)
            )
            self.screen.feedback(
                f"Folded: {result.resident_turns} turn(s) still in the window,"
                f" fullness {tokens(result.used_after)} tokens."
            )
        self.screen.refresh_meter()

    async def cmd_tools(self, arg: str) -> None:
        verb, _, name = arg.partition(" ")
        name = name.strip()
        if verb in ("on", "off") and name:
            if self.session.mcp_controls.set_tool_enabled(name, verb == "on"):
                self.screen.feedback(f"{name} is {verb} for this conversation.")
            else:
                self.screen.feedback(
                    f"No running MCP server or tool named {name!r}; /tools lists them.", "warning"
                )
        elif arg:
            self.screen.feedback("Usage: /tools [on|off NAME]", "warning")
        else:
            self.screen.feedback(self.session.mcp_controls.tools_report())

    async def cmd_regenerate(self, arg: str) -> None:
        prompt = await self.session.edits.last_prompt()  # says so when there is none
        self.screen.send(prompt, "regenerate")

    async def cmd_edit(self, arg: str) -> None:
        self.screen.edit_prompt(await self.session.edits.last_prompt())

    async def cmd_fork(self, arg: str) -> None:
        if arg and not arg.isdigit():
            self.screen.feedback("Usage: /fork [N] (N: the turn to fork at, 1 = the first)")
            return
        conv = await self.session.edits.fork(int(arg) if arg else None)
        loading = self.screen.load_conversation()
        with contextlib.suppress(Exception):  # the notice goes below the fork's history
            await loading.wait()
        at = f"turn {arg}" if arg else "the last turn"
        # in the log, not only a toast: the fork's history looks just like the original's
        self.screen.feedback(
            f"Forked at {at} into a new conversation, “{conv.title or 'untitled'}”"
            f" ({conv.id[:8]}); the original is unchanged, /resume lists both."
        )

    async def cmd_export(self, arg: str) -> None:
        fmt = (arg or "md").lower().lstrip(".")
        if fmt not in ("md", "json"):
            self.screen.feedback("Usage: /export [md|json]", "warning")
            return
        conv = self.session.conversation
        if conv is None:
            self.screen.feedback("Nothing to export yet.", "warning")
            return
        text = await self.session.conversations.export(fmt)
        path = export_path(conv.title, conv.id, fmt, Path.cwd())
        from newt.agent.session.export import write_export

        write_export(path, text)
        self.screen.notify(f"Exported to {path}", title="Export", timeout=6, markup=False)
        self.screen.feedback(f"Exported to {path}")
