"""The chat screen: log, prompt, evidence sidebar, footer with the token meter.

One user turn runs in an exclusive async worker (`chat_turn.py` shows it) that
consumes `session.turns.send(text)`; cancelling the worker (Esc) lets the session keep
the partial reply as interrupted. Slash commands live in `chat_commands.py`
and reach the screen through the CommandHost protocol it implements; both the
prompt and the command palette go through `run_command`.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import Footer, Header, Static
from textual.worker import Worker, WorkerState

from newt.ui.commands import BY_NAME, ParsedCommand, SlashCommand, parse
from newt.ui.errors import describe
from newt.ui.screens.chat_commands import ChatCommands
from newt.ui.screens.mcp_approval import ask_approval
from newt.ui.session_api import SessionLike
from newt.ui.widgets.chat_log import ChatLog
from newt.ui.widgets.entries import NoticeEntry, UserEntry
from newt.ui.widgets.evidence import EvidenceSidebar
from newt.ui.widgets.messages import ErrorMessage, MessageFork
from newt.ui.widgets.prompt import PromptBar
from newt.ui.widgets.token_meter import TokenMeter

WIDE = 120  # the evidence sidebar shows by default from this many columns
STOP_KEYS = "ctrl+c/esc stop reply"
METER_TICK_S = 1.0  # how often the footer's fullness is read again between turns


class ChatScreen(Screen[None]):
    CSS_PATH = "chat.tcss"
    AUTO_FOCUS = "#prompt-area"
    BINDINGS: ClassVar[list[BindingType]] = [
        # Not in the footer: showing and hiding it re-composed the footer at the
        # start and end of every reply (20-40 ms in which keys waited); the
        # streaming reply's status line says it instead (STOP_HINT).
        Binding("escape", "stop", "Stop reply", show=False),
        # As in most terminal chat tools: ctrl+c stops a streaming
        # reply, or clears the prompt (one undoable edit: ctrl+z brings it
        # back); with a selection, or nothing to clear, it goes on to the
        # prompt's copy or the app's "press ctrl+q to quit" (check_action).
        Binding("ctrl+c", "interrupt", "Stop reply", show=False, priority=True),
        Binding("ctrl+n", "command('new')", "New"),
        Binding("ctrl+o", "command('resume')", "Resume"),
        Binding("ctrl+g", "command('memory')", "Memory"),
        Binding("ctrl+b", "command('evidence')", "Evidence"),
        # not in the footer (it would push Help off it): each thinking block names the key
        Binding("ctrl+t", "command('thinking')", "Thinking", show=False),
        Binding("ctrl+r", "command('regenerate')", "Regenerate", show=False),
        Binding("f4", "command('edit')", "Edit last", show=False),
        Binding("f1", "command('help')", "Help"),
        Binding("f2", "command('model')", "Model", show=False),
        Binding("f3", "command('settings')", "Settings", show=False),
    ]

    def __init__(self, session: SessionLike, *, ready: bool = True) -> None:
        """`ready=False`: `session` stands in for one still opening (NewtApp's
        startup); the screen takes typing, and a prompt or command sent
        meanwhile waits for `attach()` with the real one."""
        super().__init__()
        self.session = session
        self.busy = False
        self._sidebar_choice: bool | None = None  # None: follow the terminal width
        self.commands = ChatCommands(self)
        self._ready = asyncio.Event()
        if ready:
            self._ready.set()
        self._mounted = asyncio.Event()
        self._painted = asyncio.Event()

    @property
    def ready(self) -> bool:
        """The screen has its real session."""
        return self._ready.is_set()

    async def attach(self, session: SessionLike) -> None:
        """The real session, once open: shows its conversation, then lets what
        was sent meanwhile go (a resumed history first, so it stays above)."""
        await self._mounted.wait()  # the session may open before the first frame
        self.session = session
        self._show_session()
        if session.conversation is not None:
            await self._show_history()
        self._ready.set()

    # -- layout ---------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False, icon="🦎")
        with Horizontal(id="body"):
            with Vertical(id="main"):
                # the log reads the durable log to tell which turns a fold took
                yield ChatLog(id="log", history=lambda: self.session.edits.history())
                yield PromptBar(id="prompt")
            yield EvidenceSidebar(id="evidence")
        with Horizontal(id="status-bar"):
            yield Footer()
            yield Static(STOP_KEYS, id="stop-hint")  # shown while a reply streams
            yield TokenMeter(id="meter")

    @property
    def log_view(self) -> ChatLog:
        return self.query_one(ChatLog)

    @property
    def prompt(self) -> PromptBar:
        return self.query_one(PromptBar)

    @property
    def sidebar(self) -> EvidenceSidebar:
        return self.query_one(EvidenceSidebar)

    async def first_frame(self) -> None:
        """Returns once the screen has been painted."""
        await self._painted.wait()

    def on_mount(self) -> None:
        self._mounted.set()
        self.call_after_refresh(self._painted.set)
        self.set_interval(METER_TICK_S, self._meter_tick)
        self._fit_sidebar(self.app.size.width)
        if not self.ready:
            self.refresh_header()  # the configured model; no meter until the session is open
            return
        self._show_session()
        if self.session.conversation is not None:
            self.load_conversation()

    def _meter_tick(self) -> None:
        """The footer's fullness follows the session between turns too: a
        summary landing in the background changes it (the footer kept the
        figure from the turn's end while /memory showed the new one)."""
        if self.ready and not self.busy:
            self.refresh_meter()

    def _show_session(self) -> None:
        # MCP tools with approve = "ask" ask here
        self.session.mcp_controls.set_tool_approver(partial(ask_approval, self.app))
        self.refresh_header()
        self.refresh_meter()
        self.sidebar.show(self.session.last_retention)

    def on_resize(self, event: Resize) -> None:
        self._fit_sidebar(event.size.width)

    def _fit_sidebar(self, width: int) -> None:
        show = self._sidebar_choice if self._sidebar_choice is not None else width >= WIDE
        self.sidebar.display = show

    def toggle_thinking(self) -> None:
        self.log_view.toggle_thinking()  # the blocks themselves show the change

    def toggle_sidebar(self) -> None:
        self._sidebar_choice = not self.sidebar.display
        self.sidebar.display = self._sidebar_choice

    def refresh_header(self) -> None:
        conv = self.session.conversation
        title = conv.title if conv else ""
        if conv and not title:
            # The store titles a conversation from its first message; the
            # session's copy may not have caught up yet, so derive the same.
            first = next((e for e in self.log_view.entries if isinstance(e, UserEntry)), None)
            from newt.agent.display import make_title  # not needed for the first frame

            title = make_title(first.text) if first else ""
        self.title = title or "new conversation"
        incognito = ""
        if self.session.incognito:  # and nothing of it is on disk
            incognito = " · incognito: nothing saved" if self.session.unsaved else " · incognito"
        self.sub_title = (self.session.model or "no model") + incognito

    def refresh_meter(self) -> None:
        try:
            status = self.session.memory_status()
        except Exception:  # the meter is informative; never let it break the screen
            return
        self.query_one(TokenMeter).set_usage(int(status.used), int(status.budget))

    def set_busy(self, busy: bool) -> None:
        """A turn is running: Esc stops it, and a second one waits."""
        self.busy = busy
        # on the prompt bar, not the screen: a class on the screen restyles every
        # widget of the log (measured ~60 ms of CPU per turn on a long reply)
        self.prompt.set_class(busy, "-busy")
        self.query_one("#stop-hint").set_class(busy, "-busy")  # the footer says how to stop
        # No refresh_bindings(): check_action is asked again at every key press.

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop":
            return self.busy
        if action == "interrupt":
            return self.busy or self.prompt.clearable()
        return True

    # -- loading a conversation -------------------------------------------------

    @work(exclusive=True, group="load", exit_on_error=False)
    async def load_conversation(self) -> None:
        """Show the session's current conversation from its durable log."""
        await self._show_history()

    async def _show_history(self) -> None:
        from newt.ui.widgets.entries import entries_from_history

        turns = await self.session.edits.history()
        await self.log_view.replace_all(entries_from_history(turns))
        prompt = self.prompt
        prompt.history = [t.user for t in turns if t.kind == "turn" and t.user.strip()]
        self.refresh_header()
        self.refresh_meter()
        self.sidebar.show(self.session.last_retention)

    # -- input ------------------------------------------------------------------

    @on(PromptBar.Submitted)
    def _submitted(self, event: PromptBar.Submitted) -> None:
        text = event.text
        parsed = parse(text.strip())
        if parsed is not None:
            self.prompt.remember(text.strip())
            self.prompt.set_text("")
            self.run_command(parsed)
            return
        if text.startswith("//"):
            text = text[1:]
        if not self._attachments_ok(text):
            return  # the prompt stays as typed
        fits = self._fits(text)
        if fits is None:  # large: the server counts it first
            self._count_then_send(text, event.text)
        elif fits:
            self._send_typed(text, event.text)

    def _send_typed(self, text: str, typed: str) -> None:
        if self.send(text, "edit" if self.prompt.editing else None):
            self.prompt.remember(typed)
            self.prompt.set_text("")

    @work(exclusive=True, group="count-message")
    async def _count_then_send(self, text: str, typed: str) -> None:
        self.notify("Counting a large message's tokens…", timeout=3)
        try:
            tokens = await self.session.count_tokens(text)
        except Exception:  # the estimate said it may fit; the session's guard still stands
            tokens = self.session.estimate_tokens(text)
        if self._refused(text, tokens) is False and self.prompt.text == typed:
            self._send_typed(text, typed)

    def send(self, text: str, mode: str | None = None) -> bool:
        """Start a turn; False (and a hint) if one is already running. `mode`
        "regenerate" or "edit": the turn replaces the last one."""
        if self.busy:
            self.notify(
                "A reply is still streaming — press Esc or ctrl+c to stop it.", severity="warning"
            )
            return False
        self.set_busy(True)  # before the worker starts, so a fast second Enter is refused
        self._turn(text, mode)
        return True

    def _attachments_ok(self, text: str) -> bool:
        """Check `@path` attachments before anything is sent or the bar is cleared."""
        try:  # the session checks them once open (a turn sent before waits for it)
            if self.ready and "@" in text:
                self.session.edits.check_attachments(text)
        except Exception as exc:
            self.notify(describe(exc), title="Not sent", severity="error", markup=False)
            return False
        return True

    def _fits(self, text: str) -> bool | None:
        """A message larger than the window is not sent (it would be refused
        after a long wait): it stays in the box, and the log says why. None: it
        may not fit, so the server counts it first (`_count_then_send`)."""
        if not self.ready:
            return True  # the turn is checked by the session's guard instead
        from newt.agent.own_memory.oversize import LARGE_SHARE

        try:
            tokens = self.session.estimate_tokens(text)
            if tokens > self.session.memory_status().budget // LARGE_SHARE:
                return None
        except Exception:  # a figure missing: the session's guard still stands
            return True
        return not self._refused(text, tokens)

    def _refused(self, text: str, tokens: int) -> bool:
        """Whether a message of `tokens` is too large to send (and the log says why)."""
        from newt.agent.own_memory.oversize import too_large

        try:
            why = too_large(text, tokens, self.session.memory_status())
        except Exception:  # a figure missing: the session's guard still stands
            return False
        if why is not None:
            self.feedback(f"Not sent: {why} It stays in the box; ctrl+c clears it.", "warning")
        return why is not None

    def edit_prompt(self, text: str) -> None:
        """/edit: the last prompt goes into the bar; sending it replaces that turn."""
        self.prompt.start_editing(text)

    @on(ErrorMessage.RetryRequested)
    def _retry(self, event: ErrorMessage.RetryRequested) -> None:
        if self.send(event.text) and self.prompt.text == event.text:
            self.prompt.set_text("")

    def action_interrupt(self) -> None:
        if self.busy:
            self.action_stop()
        else:
            self.prompt.clear_input()

    def action_stop(self) -> None:
        for worker in self.workers:
            if worker.group == "turn" and worker.is_running:
                worker.cancel()

    def action_command(self, name: str) -> None:
        self.run_command(ParsedCommand(BY_NAME.get(name), name, ""))

    def palette_command(self, command: SlashCommand) -> None:
        if command.arg_required:
            self.prompt.set_text(f"/{command.name} ")
            self.prompt.focus_prompt()
        else:
            self.run_command(ParsedCommand(command, command.name, ""))

    # -- one turn -----------------------------------------------------------------

    @work(exclusive=True, group="turn", exit_on_error=False)
    async def _turn(self, text: str, mode: str | None = None) -> None:
        await self._ready.wait()  # sent while the session was still opening
        # Imported here, once the app has imported the agent: the first frame
        # does not need the agent's events.
        from newt.ui.screens.chat_turn import run_turn

        await run_turn(self, text, mode)

    def feedback(self, text: str, level: str = "feedback") -> None:
        self.call_later(self.log_view.append, NoticeEntry(text, level))

    # -- commands -----------------------------------------------------------------

    def run_command(self, parsed: ParsedCommand) -> None:
        """The one dispatcher for typed commands, key bindings and the palette."""
        if self.ready:
            self.commands.run(parsed)
        else:
            self._run_when_ready(parsed)

    @work(group="starting", exit_on_error=False)
    async def _run_when_ready(self, parsed: ParsedCommand) -> None:
        await self._ready.wait()
        self.commands.run(parsed)

    @on(MessageFork)
    def _fork_here(self, event: MessageFork) -> None:
        """A message's fork key: fork at the turn it belongs to."""
        entries = self.log_view.entries
        index = next((i for i, e in enumerate(entries) if e is event.entry), None)
        if index is not None:
            turn = sum(isinstance(e, UserEntry) for e in entries[: index + 1])
            self.run_command(ParsedCommand(BY_NAME["fork"], "fork", str(max(1, turn))))
            self.prompt.focus_prompt()  # the fork continues from the prompt

    @on(EvidenceSidebar.CapsuleSelected)
    def _capsule_selected(self, event: EvidenceSidebar.CapsuleSelected) -> None:
        from newt.ui.screens.record import RecordScreen  # brings the agent's views

        self.app.push_screen(RecordScreen(event.key, self.session.fetch_record))

    # -- worker failures ----------------------------------------------------------

    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.notify(describe(event.worker.error), severity="error", title="newt", markup=False)
