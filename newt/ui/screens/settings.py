"""/settings: this conversation's system prompt, temperature, top_p and reply cap.

An empty field means "not set": newt's own persona line, the backend's
default sampling and reply cap (shown when newt knows it: the 512 of the
llama-server it runs itself). Bad values are refused here with the
reason, and the form keeps what was typed. With `incognito` given, a
checkbox keeps the conversation out of memory (its choice is `keep_out`
once saved: the result stays the settings, which ModelCommands saves).
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Static, TextArea

from newt.agent.session.settings import ChatSettings, SettingsError, settings_from_form
from newt.ui.format import clean, one_line


def window_line(context_tokens: int, budget: int, source: str) -> str:
    """The context window in force, where it comes from and what newt fills of
    it, and where to change it (the config file has it; the user should not
    have to know that)."""
    from newt.ui.screens.memory import SOURCES

    return (
        f"Context window {context_tokens:,} tokens"
        f" ({SOURCES.get(source, source)}) · newt fills {budget:,} before it folds"
        " · [memory] context_tokens in the config file sets it"
    )


def _text(value: float | int | None) -> str:
    return "" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


class SettingsScreen(ModalScreen[ChatSettings | None]):
    """Dismisses with the new settings, or None when cancelled."""

    CSS_PATH = "settings.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Cancel"),
        Binding("ctrl+s", "save", "Save", priority=True),
    ]

    def __init__(
        self,
        settings: ChatSettings,
        *,
        model: str,
        default_prompt: str,
        server_cap: int | None = None,
        server_sampling: dict[str, float] | None = None,
        incognito: bool | None = None,
        window: str = "",
    ) -> None:
        super().__init__()
        self.settings = settings
        self.incognito = incognito
        """The conversation is kept out of memory now (None: no checkbox)."""
        self.keep_out: bool | None = None
        """The checkbox as saved (None: cancelled, or no checkbox)."""
        self.model = model
        self.default_prompt = default_prompt
        self.server_cap = server_cap
        """The server's own reply cap, when newt knows it (its managed llama-server)."""
        self.server_sampling = server_sampling or {}
        """That server's default sampling by name (the model's published values)."""
        self.window = window
        """The context window in force and where it comes from (`window_line`)."""

    def compose(self) -> ComposeResult:
        s = self.settings
        with Vertical(id="panel") as panel:
            panel.border_title = "Conversation settings"
            panel.border_subtitle = "ctrl+s saves · esc cancels"
            preset = f" · preset {s.preset}" if s.preset else ""
            yield Static(
                Content(f"Model {clean(self.model)}{clean(preset)}"),
                id="settings-about",
                classes="-with-window" if self.window else "",
            )
            if self.window:
                yield Static(Content(self.window), id="settings-window")
            yield Label("System prompt (empty: newt's own)", classes="field-label")
            area = TextArea(
                s.system_prompt or "",
                id="settings-system",
                soft_wrap=True,
                show_line_numbers=False,
                tab_behavior="focus",
                compact=True,
                placeholder=one_line(self.default_prompt, 200),
            )
            yield area
            with Horizontal(id="settings-numbers"):
                for ident, label, value, hint in (
                    ("temperature", "Temperature", s.temperature, self._hint("temperature", 2)),
                    ("top-p", "Top p", s.top_p, self._hint("top_p", 1)),
                    ("max-tokens", "Max reply tokens", s.max_tokens, self._cap_hint()),
                ):
                    with Vertical(classes="number"):
                        yield Label(label, classes="field-label")
                        yield Input(_text(value), placeholder=hint, id=f"settings-{ident}")
            if self.incognito is not None:
                yield Checkbox(
                    "Incognito: save nothing of this conversation",
                    self.incognito,
                    id="settings-incognito",
                )
            yield Static("", id="settings-error")
            with Horizontal(id="settings-buttons"):
                yield Button("Save", variant="primary", id="settings-save")
                yield Button("Cancel", id="settings-cancel")

    def _hint(self, name: str, top: int) -> str:
        """What an empty sampling field means: the model's own value when newt runs
        the server and its publisher states one, else the backend's default."""
        value = self.server_sampling.get(name)
        # short enough to be read whole in the field (a longer hint is cut)
        return f"empty: model's {value:g}" if value is not None else f"0-{top}, empty: default"

    def _cap_hint(self) -> str:
        """What an empty reply cap means: the server's own cap when one is known
        (the managed llama-server's 512), not "no cap" while replies are cut there."""
        if self.server_cap:
            return f"empty: capped at {self.server_cap}"
        return "empty: server default"

    def on_mount(self) -> None:
        self.query_one("#settings-system", TextArea).focus()

    def _value(self, ident: str) -> str:
        return self.query_one(f"#settings-{ident}", Input).value

    def action_save(self) -> None:
        try:
            settings = settings_from_form(
                self.query_one("#settings-system", TextArea).text,
                self._value("temperature"),
                self._value("top-p"),
                self._value("max-tokens"),
                preset=self.settings.preset,
            )
        except SettingsError as exc:
            self.query_one("#settings-error", Static).update(Content(str(exc)))
            return
        if self.incognito is not None:
            self.keep_out = self.query_one("#settings-incognito", Checkbox).value
        self.dismiss(settings)

    @on(Input.Submitted)
    def _enter(self, event: Input.Submitted) -> None:
        self.action_save()

    @on(Button.Pressed, "#settings-save")
    def _save_pressed(self, event: Button.Pressed) -> None:
        self.action_save()

    @on(Button.Pressed, "#settings-cancel")
    def _cancel_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)
