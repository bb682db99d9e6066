"""First run: no backend configured and none found on the usual local ports."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Button, Input, Label, Static

from newt.config import save_settings

INTRO = (
    "newt needs an OpenAI-compatible server. None is configured, and nothing answered on "
    "the usual local ports (llama-server 8080, Ollama 11434, LM Studio 1234, vLLM 8000).\n\n"
    "Enter one below (saved to the config file, comments kept), or quit and run "
    "`newt --local MODEL.gguf` to have newt start llama-server for you."
)


@dataclass
class BackendSettings:
    base_url: str
    model: str
    api_key_env: str


class SetupScreen(Screen[BackendSettings | None]):
    CSS_PATH = "setup.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Quit")]

    def __init__(self, config_path: Path, *, base_url: str = "", model: str = "") -> None:
        super().__init__()
        self.config_path = config_path
        self._base_url = base_url
        self._model = model

    def compose(self) -> ComposeResult:
        with Vertical(id="panel") as panel:
            panel.border_title = "Set up a backend"
            yield Static(Content(INTRO), id="setup-intro")
            yield Label("Base URL")
            yield Input(self._base_url, placeholder="http://127.0.0.1:8080/v1", id="setup-base-url")
            yield Label("Model")
            yield Input(self._model, placeholder="e.g. qwen2.5-7b-instruct", id="setup-model")
            yield Label("API key environment variable (the key itself is never saved)")
            yield Input("OPENAI_API_KEY", id="setup-key-env")
            yield Static("", id="setup-error")
            with Horizontal(id="setup-buttons"):
                yield Button("Save and start", variant="primary", id="setup-save")
                yield Button("Quit", id="setup-quit")
            yield Static(Content(f"Config file: {self.config_path}"), id="setup-path")

    def on_mount(self) -> None:
        self.query_one("#setup-base-url", Input).focus()

    @on(Button.Pressed, "#setup-quit")
    def _quit(self) -> None:
        self.dismiss(None)

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
        self.dismiss(BackendSettings(base_url, model, key_env))
