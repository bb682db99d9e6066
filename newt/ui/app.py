"""newt's Textual app and the `run_tui` entry point.

Startup: with a backend configured, the chat screen is drawn at once, before
the agent session exists, and takes typing; a worker then imports the agent
(recall, memory, the HTTP client: in a thread, so keys still echo), opens the
session (which opens the database it owns), opens what the command line asked
for (`OpenRequest`: a resumed conversation, a preset, incognito; see
open_request.py) and hands the session to the screen, which then sends
anything submitted meanwhile. Without a backend the worker first finds or asks
for one behind a status screen. Problems become an error screen with Retry /
Change backend / Quit, never a traceback. The session is always closed, also
when the app dies: its open database connection keeps a non-daemon thread
alive and would hang the process at exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import inspect
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, cast

from textual import on, work
from textual.app import App
from textual.binding import Binding, BindingType

from newt.config import Config
from newt.config_paths import default_config_path
from newt.ui.command_palette import SlashCommandProvider
from newt.ui.errors import describe
from newt.ui.open_request import OpenRequest, open_requested
from newt.ui.screens.chat import ChatScreen
from newt.ui.screens.status import ConnectingScreen, ErrorScreen
from newt.ui.session_api import SessionFace, SessionLike
from newt.ui.starting_session import StartingSession
from newt.ui.widgets.chat_log import ChatLog

if TYPE_CHECKING:
    from newt.agent.local.managed_server import ManagedLocal
    from newt.ui.screens.setup import BackendSettings, LocalModel

OpenSession = Callable[[Config, Callable[[str], None]], Awaitable[SessionLike]]
Discover = Callable[[], Any]  # () -> (base_url, model) | None, possibly awaitable

CLOSE_TIMEOUT = 5.0
FIRST_RUN_LOCAL = "Running SmolLM2-135M, a tiny model. Stronger ones: newt --local --list"
"""The first run's note when it fell back to SmolLM2: one line, a few seconds
(a whole "fetch later" paragraph covered the message box for seconds)."""


# What the first frame leaves out and the first turn needs.
AGENT_MODULES = (
    "newt.agent.session.chat_session",
    "newt.agent.display",
    "newt.ui.screens.chat_turn",
)


def _import_all(names: tuple[str, ...]) -> None:
    for name in names:
        importlib.import_module(name)


async def import_agent() -> None:
    """Import the agent's session with what it brings (recall, memory, the
    HTTP client, ~0.1 s of CPU) in a thread: the chat screen is already up,
    and the event loop keeps echoing keys meanwhile."""
    await asyncio.to_thread(_import_all, AGENT_MODULES)


async def _open_session(config: Config, on_status: Callable[[str], None]) -> SessionLike:
    await import_agent()
    from newt.agent.session.chat_session import ChatSession

    session: SessionLike = await ChatSession.open(config, background_probe=True)
    return session


def _discover() -> Any:
    from newt.agent.local.discovery import find_local_backend

    return find_local_backend()


class NewtApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "newt"
    COMMANDS = App.COMMANDS | {SlashCommandProvider}
    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+q", "quit", "Quit", priority=True)]

    def __init__(
        self,
        config: Config,
        *,
        opening: OpenRequest | None = None,
        open_session: OpenSession = _open_session,
        discover: Discover = _discover,
        freeze_startup_heap: bool = False,
        local: ManagedLocal | None = None,
    ) -> None:
        super().__init__()
        self.config = config
        self.opening = opening or OpenRequest()
        """What the command line asked to open first (-r/-c, --preset, --incognito)."""
        self.session: SessionLike | None = None
        self._open_session = open_session
        self._discover = discover
        self._closed = False
        self.local = local
        """The llama-server newt runs (`--local` or the first-run choice): /model switches it."""
        self._local_embeddings: Any = None  # and MiniLM beside it, for recall by meaning
        self._freeze_startup_heap = freeze_startup_heap
        self._early_chat: ChatScreen | None = None  # drawn before the session opened

    def on_mount(self) -> None:
        theme = self.config.ui.theme
        if theme in self.available_themes:
            self.theme = theme
        elif theme:
            self.notify(f"Unknown theme {theme!r} in [ui] theme; using the default.", markup=False)
        if self.config.backend.base_url:
            # The prompt is usable at once; the session opens behind it.
            # what the screen draws from; the rest waits for attach() (starting_session.py)
            stand_in: SessionFace = StartingSession(self.config)
            self._early_chat = ChatScreen(cast(SessionLike, stand_in), ready=False)
            self.push_screen(self._early_chat)
        else:
            self.push_screen(ConnectingScreen("Starting…"))
        self.start()

    # -- startup ------------------------------------------------------------------

    def _say(self, text: str) -> None:
        if isinstance(self.screen, ConnectingScreen):
            self.screen.say(text)

    @work(exclusive=True, group="startup", exit_on_error=False)
    async def start(self) -> None:
        try:
            await self._start()
        except Exception as exc:  # last line of defence: a message, not a traceback
            await self.push_screen_wait(
                ErrorScreen("newt could not start", describe(exc), can_retry=False)
            )
            self.exit(return_code=1)

    async def _start(self) -> None:
        if self._early_chat is not None:
            # The imports below would compete with the first frame for the GIL.
            await self._early_chat.first_frame()
        if not self.config.backend.base_url and not await self._find_backend():
            return
        while self.session is None:
            self._say(f"Connecting to {self.config.backend.base_url}…")
            try:
                self.session = await self._open_session(self.config, self._say)
            except Exception as exc:
                from newt.agent.display import StoreError  # imported with the agent by now
                from newt.agent.errors import NoBackendConfigured

                if isinstance(exc, StoreError):
                    await self.push_screen_wait(
                        ErrorScreen(
                            "The database could not be opened", describe(exc), can_retry=False
                        )
                    )
                    self.exit(return_code=1)
                    return
                if isinstance(exc, NoBackendConfigured):
                    # e.g. a base URL but no model: the setup form is the fix.
                    if not await self._ask_backend():
                        return
                    continue
                choice = await self.push_screen_wait(
                    ErrorScreen(
                        "The backend is not answering",
                        f"{describe(exc)}\n\nBackend: {self.config.backend.base_url}"
                        f" · model: {self.config.backend.model or '(server default)'}",
                    )
                )
                if choice == "quit":
                    self.exit(return_code=1)
                    return
                if choice == "setup" and not await self._ask_backend():
                    return
        await self._open_requested_conversation(self.session)
        if self._early_chat is not None:
            await self._early_chat.attach(self.session)
        else:
            await self.switch_screen(ChatScreen(self.session))
        self.call_after_refresh(self.startup_settled)  # the chat screen is painted

    async def _find_backend(self) -> bool:
        """No backend configured: try local servers, else the setup screen."""
        self._say("Looking for a local model server…")
        try:
            found = self._discover()
            if inspect.isawaitable(found):
                found = await found
        except Exception:
            found = None
        if found:
            base_url, model = found
            self.config.backend.base_url = base_url
            if not self.config.backend.model:
                self.config.backend.model = model
            self.notify(f"Using the local server at {base_url}.", timeout=4)
            return True
        return await self._ask_backend()

    async def _ask_backend(self) -> bool:
        from newt.ui.screens.setup import LocalModel, SetupScreen  # only without a backend

        backend = self.config.backend
        path = self.config.path or default_config_path()
        settings: BackendSettings | LocalModel | None = await self.push_screen_wait(
            SetupScreen(path, base_url=backend.base_url, model=backend.model)
        )
        if settings is None:
            self.exit(return_code=0)
            return False
        if isinstance(settings, LocalModel):
            return await self._start_local(settings)
        backend.base_url, backend.model = settings.base_url, settings.model
        backend.api_key_env = settings.api_key_env
        self.config.api_key = os.environ.get(settings.api_key_env) or self.config.api_key
        return True

    async def _start_local(self, choice: LocalModel) -> bool:
        """The first-run choice to run a model here: llama-server for the rest of the app."""
        from newt.agent.local.first_run import start_local_embeddings
        from newt.agent.local.managed_server import ManagedLocal
        from newt.config import save_local_choice

        self._say("Starting the local model…")
        try:  # it sets the config's window and cap: the first figures are this window's
            self.local = await ManagedLocal.start(self.config, choice.model, binary=choice.binary)
        except Exception as exc:
            self.notify(describe(exc), title="The local model did not start", severity="error",
                        timeout=10, markup=False)  # fmt: skip
            return await self._ask_backend()
        if not choice.remember:  # SmolLM2, e.g. with no network: say what comes next
            self.notify(FIRST_RUN_LOCAL, title="A local model", timeout=6, markup=False)
        try:  # every later newt, -c and -p starts it again instead of asking
            save_local_choice(
                self.config.path or default_config_path(), choice.remember, choice.about
            )
        except (OSError, ValueError) as exc:
            self.notify(
                f"The choice was not saved to the config file: {exc}",
                severity="warning",
                timeout=8,
                markup=False,
            )
        try:  # as `newt --local` does: recall by meaning when MiniLM is cached
            self._local_embeddings = await start_local_embeddings(self.config)
        except Exception as exc:
            self.notify(
                f"{describe(exc)}\nRecall goes by words.",
                title="The embeddings model did not start",
                severity="warning",
                timeout=8,
                markup=False,
            )
        return True

    async def _open_requested_conversation(self, session: SessionLike) -> None:
        await open_requested(session, self.opening, self.notify)

    def startup_settled(self) -> None:
        """Called once the chat screen is painted and again after the Markdown
        warm-up (ChatLog): the session's background work (the capability probe)
        may start, and what exists now lives as long as the app."""
        if self.session is not None:  # the warm-up may come before the session opened
            self.session.start_background_work()
            self.run_worker(self._meter_after_probe(), group="probe-meter", exit_on_error=False)
        if self._freeze_startup_heap:
            freeze_startup_heap()

    async def _meter_after_probe(self) -> None:
        """Redraw the status bar once the background probe has landed: a window it
        found replaces the cached or default one, and the bar must not go on
        showing the old budget until the first reply."""
        if self.session is None:
            return
        with contextlib.suppress(Exception):
            await self.session.probed()
        if isinstance(self.screen, ChatScreen):
            self.screen.refresh_meter()

    @on(ChatLog.WarmedUp)
    def _log_warmed_up(self) -> None:
        self.startup_settled()  # e.g. the startup heap leaves GC now

    # -- shutdown -----------------------------------------------------------------

    async def on_unmount(self) -> None:
        # Covers every way out (exit from a worker, run_test, ctrl+q): the
        # connection must be closed while the event loop still runs.
        await self.aclose()

    async def action_quit(self) -> None:
        await self.aclose()
        self.exit()

    async def aclose(self) -> None:
        """Stop a reply in flight (kept as interrupted), then close the session."""
        if self._closed:
            return
        self._closed = True
        turns = [w for w in self.workers if w.group == "turn" and w.is_running]
        for worker in turns:
            worker.cancel()
        for worker in turns:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(worker.wait(), CLOSE_TIMEOUT)
        if self.session is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.session.close(), CLOSE_TIMEOUT)
        for server in (self._local_embeddings, self.local):
            if server is not None:
                server.stop()


def freeze_startup_heap() -> None:
    """Leave what startup built (modules, classes, styles, ~90,000 objects) out
    of every later garbage collection.

    A full collection walks every tracked object; with the startup heap in it,
    each took 80-120 ms on this project's machine in the middle of a stream,
    and a key typed then waited for it. Frozen objects are still freed by
    reference counting; only the process's own `newt` does this (tests run
    many apps in one process and must not keep each one's garbage).
    """
    gc.collect(1)  # the young garbage of startup goes first
    gc.freeze()


def run_tui(
    config: Config,
    *,
    opening: OpenRequest | None = None,
    local: ManagedLocal | None = None,
) -> int:
    """Run the TUI; returns the process exit code. `opening`: what to open first
    (-r/-c, --preset, --incognito); `local`: the managed llama-server the command
    line started, for /model to switch."""
    app = NewtApp(config, opening=opening, freeze_startup_heap=True, local=local)

    async def main() -> None:
        try:
            await app.run_async()
        finally:
            await app.aclose()

    asyncio.run(main())
    return app.return_code or 0
