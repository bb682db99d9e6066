"""First run: no backend configured and none found on the usual local ports.

The first choices run a model on this machine: chat GGUFs already here (the
Hugging Face cache, LM Studio, Ollama) first, then the download catalogue with
the one recommended for this machine, then SmolLM2-135M-Instruct, which works
offline and has the focus unless a model was found here (so Enter always ends
in a chat). newt fetches what is missing and builds llama-server if needed (a
progress bar with the time left), then the app starts llama-server and opens
the chat. Last comes the form for a server the user already has.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Button, Input, Label, ProgressBar, Static

from newt.agent.local.catalogue import FETCH_LATER, LocalChoice, local_choices, prepare_choice
from newt.agent.local.first_run import (
    Plan,
    Progress,
    ProgressFn,
    SetupCancelled,
    SetupError,
    ensure_local_model,
    plan,
)
from newt.config import save_settings

INTRO = (
    "newt needs a model to talk to. None is configured, and nothing answered on the usual "
    "local ports (llama-server 8080, Ollama 11434, LM Studio 1234, vLLM 8000). The first "
    "choice runs one here, as `newt --local` does, and is saved to the config file: later "
    "runs start it directly."
)
LOCAL_LABEL = "Run SmolLM2-135M-Instruct (tiny, works offline)"
LOCAL_ABOUT = (
    "SmolLM2-135M-Instruct on llama.cpp's llama-server, fully offline: a small model that "
    "answers short questions. " + FETCH_LATER
)
CHOICES_ABOUT = "Run a chat model on this machine (found here first, then ones to download):"
FORM_ABOUT = "Or use a server you already run (saved to the config file, comments kept):"

PrepareLocal = Callable[[ProgressFn], tuple[Path, Path]]
PrepareChoice = Callable[[LocalChoice, ProgressFn], tuple[Path, Path]]


@dataclass
class BackendSettings:
    base_url: str
    model: str
    api_key_env: str


@dataclass
class LocalModel:
    """The choice to run a model here: what the app hands to llama-server."""

    binary: Path
    model: Path
    remember: str = ""
    """What `[backend] local_model` keeps ("" is SmolLM2), so later runs start it again."""
    about: str = ""
    """Its comment in the config file (the model's name)."""


def _prepare(progress: ProgressFn) -> tuple[Path, Path]:
    return ensure_local_model(progress=progress)


def _safe_choices() -> list[LocalChoice]:
    """The models to offer; none when looking fails (an unreadable folder must not stop
    the first run: SmolLM2 is still there)."""
    try:
        return local_choices()
    except Exception:
        return []


def _minutes(seconds: float) -> str:
    if seconds < 60:
        return "less than a minute"
    minutes = round(seconds / 60)
    return f"about {minutes} minute{'s' if minutes != 1 else ''}"


class SetupScreen(Screen[BackendSettings | LocalModel | None]):
    CSS_PATH = "setup.tcss"
    DEFAULT_CSS = """
    SetupScreen .setup-choice-about { color: $text-muted; padding-left: 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "quit_setup", "Quit")]

    def __init__(
        self,
        config_path: Path,
        *,
        base_url: str = "",
        model: str = "",
        local_plan: Plan | None = None,
        prepare_local: PrepareLocal = _prepare,
        choices: list[LocalChoice] | None = None,
        prepare_choice: PrepareChoice = prepare_choice,
    ) -> None:
        super().__init__()
        self.config_path = config_path
        self._base_url = base_url
        self._model = model
        self.local_plan = local_plan if local_plan is not None else plan()
        self._prepare_local = prepare_local
        self._cancel = threading.Event()
        self.choices = choices if choices is not None else _safe_choices()
        self._prepare_choice = prepare_choice
        self._chosen: LocalChoice | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="panel") as panel:
            panel.border_title = "Set up a model"
            with VerticalScroll(id="setup-body"):
                yield Static(Content(INTRO), id="setup-intro")
                with Vertical(id="setup-local-box"):
                    if self.choices:
                        yield Static(Content(CHOICES_ABOUT), id="setup-choices-about")
                    for i, choice in enumerate(self.choices):
                        yield Button(
                            Content(f"Run {choice.label}"),
                            id=f"setup-choice-{i}",
                            classes="setup-choice",
                        )
                    yield Button(Content(LOCAL_LABEL), id="setup-local", classes="setup-choice")
                    # what the highlighted choice is: one text, so the list stays one line each
                    yield Static("", id="setup-choice-detail", classes="setup-about")
                    yield ProgressBar(total=100, show_eta=False, id="setup-progress")
                    yield Static("", id="setup-progress-text")
                yield Static(Content(FORM_ABOUT), id="setup-form-about")
                yield Label("Base URL")
                yield Input(
                    self._base_url, placeholder="http://127.0.0.1:8080/v1", id="setup-base-url"
                )
                yield Label("Model")
                yield Input(self._model, placeholder="e.g. qwen2.5-7b-instruct", id="setup-model")
                yield Label("API key environment variable (the key itself is never saved)")
                yield Input("OPENAI_API_KEY", id="setup-key-env")
                yield Static("", id="setup-error")
                yield Static(Content(f"Config file: {self.config_path}"), id="setup-path")
            # below the scrolling part: always in view, whatever the terminal's size
            with Horizontal(id="setup-buttons"):
                yield Button("Save and start", id="setup-save")
                yield Button("Quit", id="setup-quit")

    def on_mount(self) -> None:
        found = [i for i, c in enumerate(self.choices) if c.path is not None]
        first = f"#setup-choice-{found[0]}" if found else "#setup-local"
        self.query_one(first, Button).focus()
        self._describe(first.removeprefix("#"))

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        if isinstance(event.widget, Button) and event.widget.has_class("setup-choice"):
            self._describe(event.widget.id or "")

    def _describe(self, button_id: str) -> None:
        """The highlighted choice's details under the list: what its button runs."""
        if button_id == "setup-local":
            text = f"{LOCAL_ABOUT}\n{self.local_plan.describe()}"
        else:
            choice = self.choices[int(button_id.rpartition("-")[2])]
            text = choice.detail
        self.query_one("#setup-choice-detail", Static).update(Content(text))

    # -- run a model here -------------------------------------------------------------

    @on(Button.Pressed, ".setup-choice")
    def _run_choice(self, event: Button.Pressed) -> None:
        if event.button.id == "setup-local":
            return  # SmolLM2: _run_local
        index = int((event.button.id or "").rpartition("-")[2])
        self._chosen = self.choices[index]
        self._start()

    @on(Button.Pressed, "#setup-local")
    def _run_local(self) -> None:
        self._chosen = None
        self._start()

    def _start(self) -> None:
        for button in self.query(".setup-choice, #setup-local").results(Button):
            button.disabled = True
        self.query_one("#setup-error", Static).update("")
        self.add_class("preparing")
        self._cancel.clear()
        self._prepare_worker()

    @work(thread=True, exclusive=True, group="local-setup", exit_on_error=False)
    def _prepare_worker(self) -> None:
        def progress(p: Progress) -> None:
            if self._cancel.is_set():
                raise SetupCancelled("cancelled")
            self.app.call_from_thread(self._show_progress, p)

        chosen = self._chosen
        try:
            if chosen is None:
                binary, model = self._prepare_local(progress)
            else:
                binary, model = self._prepare_choice(chosen, progress)
        except SetupCancelled:
            return
        except (SetupError, OSError) as exc:
            self.app.call_from_thread(self._local_failed, str(exc))
            return
        remember, about = chosen.remembered if chosen is not None else ("", "")
        self.app.call_from_thread(self.dismiss, LocalModel(binary, model, remember, about))

    def _show_progress(self, p: Progress) -> None:
        if self._chosen is not None:  # its own steps: the message says size, speed, time left
            self.query_one("#setup-progress", ProgressBar).update(progress=round(p.fraction * 100))
            self.query_one("#setup-progress-text", Static).update(Content(p.message))
            return
        fraction, left = self.local_plan.overall(p)
        self.query_one("#setup-progress", ProgressBar).update(progress=round(fraction * 100, 1))
        line = f"{p.message}\n{_minutes(left)} left" if not self.local_plan.ready else p.message
        self.query_one("#setup-progress-text", Static).update(Content(line))

    def _local_failed(self, message: str) -> None:
        self.remove_class("preparing")
        for button in self.query(".setup-choice, #setup-local").results(Button):
            button.disabled = False
        error = self.query_one("#setup-error", Static)
        error.update(Content(message))
        # Enter still ends in a chat (SmolLM2 needs no network); the error is below the
        # form, so it is brought into view
        self.query_one("#setup-local", Button).focus(scroll_visible=False)
        self.call_after_refresh(error.scroll_visible)

    # -- leave -----------------------------------------------------------------------

    def action_quit_setup(self) -> None:
        self._cancel.set()  # a build in progress stops (its compiler is killed)
        self.dismiss(None)

    @on(Button.Pressed, "#setup-quit")
    def _quit(self) -> None:
        self.action_quit_setup()

    # -- a server the user runs ----------------------------------------------------------

    @on(Input.Submitted)
    @on(Button.Pressed, "#setup-save")
    def _save(self) -> None:
        base_url = self.query_one("#setup-base-url", Input).value.strip().rstrip("/")
        model = self.query_one("#setup-model", Input).value.strip()
        key_env = self.query_one("#setup-key-env", Input).value.strip() or "OPENAI_API_KEY"
        error = self.query_one("#setup-error", Static)
        if not base_url.startswith(("http://", "https://")):
            error.update("The base URL must start with http:// or https://")
            self.query_one("#setup-base-url", Input).focus()
            return
        try:
            save_settings(
                self.config_path,
                {"backend": {"base_url": base_url, "model": model, "api_key_env": key_env}},
            )
        except (OSError, ValueError) as exc:
            error.update(Content(f"Could not save {self.config_path}: {exc}"))
            return
        self._cancel.set()
        self.dismiss(BackendSettings(base_url, model, key_env))
