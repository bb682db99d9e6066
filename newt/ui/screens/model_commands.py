"""/model, /settings and /preset: what the conversation asks of which model.

Mixed into ChatCommands (its dispatcher calls `open_panel` for these names
without an argument, and `cmd_<name>` with one). Everything that talks to the
session runs in a command worker, so a backend slow to list its models never
blocks the screen.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from newt.ui.format import tokens
from newt.ui.local_model_picker import PICKER_TITLE, local_choices, managed, switch_local
from newt.ui.screens.choice_picker import Choice as PickerChoice
from newt.ui.screens.choice_picker import ChoicePickerScreen, model_detail

if TYPE_CHECKING:
    from newt.agent.session.settings import ChatSettings
    from newt.ui.command_host import CommandHost
    from newt.ui.session_api import SessionLike


def describe_settings(s: ChatSettings) -> str:
    prompt = f"own system prompt ({len(s.system_prompt)} chars)" if s.system_prompt else None
    parts = [
        prompt or "newt's system prompt",
        f"temperature {s.temperature:g}" if s.temperature is not None else None,
        f"top_p {s.top_p:g}" if s.top_p is not None else None,
        f"replies up to {s.max_tokens:,} tokens" if s.max_tokens is not None else None,
    ]
    return ", ".join(p for p in parts if p)


class ModelCommands:
    screen: CommandHost

    @property
    def session(self) -> SessionLike:
        raise NotImplementedError

    def spawn(self, work: Awaitable[None]) -> None:
        raise NotImplementedError

    def open_panel(self, name: str) -> bool:
        """Open the screen of a command given without an argument; False if it has none."""
        app = self.screen.app
        if name == "model":
            app.push_screen(self._model_picker(), self._model_picked)
        elif name == "settings":
            from newt.ui.screens.settings import SettingsScreen  # brings the agent's settings

            session = self.session
            screen = SettingsScreen(
                session.settings_controls.settings,
                model=session.model,
                default_prompt=session.settings_controls.default_system_prompt,
                server_cap=session.config.server_reply_cap,
                server_sampling=session.config.server_sampling,
            )
            app.push_screen(screen, self._settings_saved)
        elif name == "preset":
            if not self.session.settings_controls.presets:
                self.screen.feedback(
                    "No presets yet: add [presets.NAME] tables (system_prompt, temperature, "
                    "top_p, max_tokens, model) to the config file.",
                    "warning",
                )
                return True
            app.push_screen(self._preset_picker(), self._preset_picked)
        else:
            return False
        return True

    # -- /model ----------------------------------------------------------------

    def _model_picker(self) -> ChoicePickerScreen:
        session = self.session
        local = managed(self.screen)
        if local is not None:  # newt's own llama-server: the local models it knows
            return ChoicePickerScreen(
                PICKER_TITLE,
                lambda: local_choices(local),
                placeholder="Filter local models, or type a GGUF path…",
                free_text=True,
                noun="model",
            )

        async def load() -> list[PickerChoice]:
            return [
                PickerChoice(m.id, model_detail(m.context_window, m.detail), m.current)
                for m in await session.settings_controls.list_models()
            ]

        return ChoicePickerScreen(
            f"Models at {session.base_url}",
            load,
            placeholder="Filter models, or type a name…",
            free_text=True,
            noun="model",
        )

    def _model_picked(self, name: str | None) -> None:
        if name:
            self.spawn(self.cmd_model(name))

    async def cmd_model(self, arg: str) -> None:
        if await switch_local(self.screen, self.session, arg.strip()):
            return
        await self.session.set_model(arg)
        self.screen.refresh_header()
        self.screen.refresh_meter()
        status: Any = self.session.memory_status()
        self.screen.feedback(
            f"Model set to {self.session.model}. Memory budget {tokens(status.budget)} tokens "
            f"of a {tokens(status.context_tokens)}-token window ({status.budget_source})."
        )

    # -- /settings ---------------------------------------------------------------

    def _settings_saved(self, settings: ChatSettings | None) -> None:
        if settings is not None:
            self.spawn(self._save_settings(settings))

    async def _save_settings(self, settings: ChatSettings) -> None:
        await self.session.settings_controls.update_settings(settings)
        self.screen.refresh_meter()  # a new system prompt moved the figures
        self.screen.feedback(f"Settings saved: {describe_settings(settings)}.")

    # -- /preset -----------------------------------------------------------------

    def _preset_picker(self) -> ChoicePickerScreen:
        presets = self.session.settings_controls.presets
        current = self.session.settings_controls.settings.preset

        async def load() -> list[PickerChoice]:
            return [
                PickerChoice(
                    name,
                    (f"model {p.model} · " if p.model else "") + describe_settings(p.settings),
                    name == current,
                )
                for name, p in sorted(presets.items())
            ]

        return ChoicePickerScreen("Presets", load, placeholder="Filter presets…", noun="preset")

    def _preset_picked(self, name: str | None) -> None:
        if name:
            self.spawn(self.cmd_preset(name))

    async def cmd_preset(self, arg: str) -> None:
        preset = await self.session.apply_preset(arg)
        self.screen.refresh_header()
        self.screen.refresh_meter()
        model = f" on {self.session.model}" if preset.model else ""
        self.screen.feedback(
            f"Preset {preset.name} applied{model}: {describe_settings(preset.settings)}."
        )
