"""FakeSettingsControls, the fake SettingsControlsApi: settings, presets, one model.

Settings are held as set, presets are whatever the test puts in `presets`, and the
backend offers only the shared FakeState's model: /settings and /preset run with
no backend and no config file.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from newt.agent.session.settings import ChatSettings, ModelChoice
from newt.chat_settings import Preset
from tests.support.fakes.state import FakeState

if TYPE_CHECKING:
    from newt.ui.session_api import SettingsControlsApi


@dataclass
class FakeSettingsControls:
    """The conversation's settings as last updated; a preset applies its settings and,
    with `switch_model`, its model (LookupError for an unknown name)."""

    state: FakeState
    settings: ChatSettings = field(default_factory=ChatSettings)
    presets: dict[str, Preset] = field(default_factory=dict)
    default_system_prompt: str = "You are newt, a helpful assistant."

    async def list_models(self) -> list[ModelChoice]:
        return [ModelChoice(self.state.model, None, "", True)]

    async def update_settings(self, settings: ChatSettings) -> None:
        self.settings = settings

    def use_preset(self, name: str) -> Preset:
        """The preset's settings (ChatSession.apply_preset's part of it)."""
        preset = self.presets.get(name)
        if preset is None:
            raise LookupError(f"no preset named {name!r}")
        self.settings = replace(preset.settings, preset=name)
        return preset


if TYPE_CHECKING:

    def _fits(controls: FakeSettingsControls) -> SettingsControlsApi:
        return controls  # mypy: the fake is all the UI asks of settings and presets
