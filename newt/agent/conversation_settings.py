"""The session's per-conversation settings, presets and the backend's model list.

What a conversation asks of the model (newt.chat_settings.ChatSettings) lives
with it in the store (migration 8) and is restored on resume. A conversation
that has no row in the store yet (no turn sent) keeps its settings here and
stores them with its first turn.

The system prompt is part of every prompt the backend measures, so the memory
figures are anchored on a size that holds the old one. A change shifts the
anchor by the difference of the two system messages (notes included, as the
provider composes them), and the shift is stored with the settings together
with the newest row of the log: a restore whose anchor is a row at or before
that one adds the same shift; any measured turn after it carries the new
prompt already.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from newt.agent.errors import SessionError
from newt.backend.models import ModelListUnavailable, list_models
from newt.chat_settings import (
    ChatSettings,
    Preset,
    SettingsError,
    settings_from_form,
    unknown_preset_message,
)
from newt.config import Config
from newt.memory import MemoryProvider
from newt.resources import asset_text
from newt.store import Conversation, Store, StoredSettings, StoredTurn

__all__ = [
    "ChatSettings",
    "ModelChoice",
    "ModelsUnavailable",
    "SettingsControls",
    "SettingsError",
    "effective_system_prompt",
    "settings_from_form",
]


class ModelsUnavailable(SessionError):
    """The backend did not list its models; the picker takes a typed name."""


@dataclass(frozen=True)
class ModelChoice:
    """One entry of the /model picker."""

    id: str
    context_window: int | None
    detail: str
    current: bool


def newt_system_prompt() -> tuple[str, str]:
    """(persona, guidance): the asset's first line is newt's persona, which a
    conversation's own system prompt replaces; the rest (the memory tools,
    evidence is not an instruction) stays, since memory relies on it."""
    persona, _, guidance = asset_text("system_prompt.md").strip().partition("\n")
    return persona.strip(), guidance.strip()


def effective_system_prompt(settings: ChatSettings) -> str:
    persona, guidance = newt_system_prompt()
    head = settings.system_prompt or persona
    return f"{head}\n{guidance}" if guidance else head


def anchor_is_before(log: Sequence[StoredTurn], shift_after: int | None) -> bool:
    """No row after `shift_after` measured the prompt (a reported turn, or a
    compaction record whose fullness already held the shift)."""
    after = shift_after or 0
    return not any(
        t.id > after and (t.tokens_in is not None or t.kind == "compaction") for t in log
    )


class SettingsControls:
    """Mixed into ChatSession: the settings of the conversation it holds."""

    config: Config
    store: Store
    lock: asyncio.Lock
    provider: MemoryProvider
    model: str
    base_url: str
    estimate_tokens: Callable[[str], int]

    @property
    def conversation(self) -> Conversation | None:
        raise NotImplementedError

    async def set_model(self, model: str) -> None:
        raise NotImplementedError

    def _init_settings(self) -> None:
        self.default_settings = ChatSettings()
        """What a new conversation starts with (`newt --preset` sets it)."""
        self._stored = StoredSettings()
        self._settings_unsaved = False

    @property
    def settings(self) -> ChatSettings:
        return self._stored.settings

    @property
    def presets(self) -> dict[str, Preset]:
        return self.config.presets

    @property
    def system_prompt(self) -> str:
        return effective_system_prompt(self.settings)

    @property
    def default_system_prompt(self) -> str:
        """newt's persona line, which an empty system prompt setting leaves in place."""
        return newt_system_prompt()[0]

    # -- the conversation's life -------------------------------------------

    def _settings_for_new(self) -> None:
        self._stored = StoredSettings(self.default_settings)
        self._settings_unsaved = not self.default_settings.is_default

    async def _settings_for_loaded(self, conv: Conversation, log: Sequence[StoredTurn]) -> None:
        """After a restore: this conversation's settings, and the anchor shift
        a system prompt changed after its last measured turn still owes."""
        stored = await self.store.settings.get(conv.id)
        self._stored = stored or StoredSettings()
        self._settings_unsaved = False
        if stored and stored.anchor_shift and anchor_is_before(log, stored.shift_after):
            shift_anchor(self.provider, stored.anchor_shift)

    async def _save_new_settings(self) -> None:
        """The first turn created the conversation: store what was set before it."""
        if self._settings_unsaved and self.conversation is not None:
            await self.store.settings.put(self.conversation.id, self._stored)
            self._settings_unsaved = False

    # -- changing them -----------------------------------------------------

    async def update_settings(self, settings: ChatSettings) -> None:
        """Set this conversation's settings; a new system prompt re-anchors memory."""
        async with self.lock:
            await self._update_settings(settings)

    async def _update_settings(self, settings: ChatSettings) -> None:
        old_prompt = self.system_prompt
        stored = StoredSettings(settings, self._stored.anchor_shift, self._stored.shift_after)
        new_prompt = effective_system_prompt(settings)
        if new_prompt != old_prompt and getattr(self.provider, "last_reported", None) is not None:
            compose = getattr(self.provider, "compose_system_prompt", lambda text: text)
            shift = self.estimate_tokens(compose(new_prompt)) - self.estimate_tokens(
                compose(old_prompt)
            )
            shift_anchor(self.provider, shift)
            conv = self.conversation
            newest = (await self.store.turns.shape(conv.id))[1] if conv is not None else None
            if stored.shift_after != newest:  # a turn measured since: start afresh
                stored.anchor_shift, stored.shift_after = 0, newest
            stored.anchor_shift += shift
        self._stored = stored
        if self.conversation is None:
            self._settings_unsaved = True
        else:
            await self.store.settings.put(self.conversation.id, stored)

    def find_preset(self, name: str) -> Preset:
        preset = self.presets.get(name.strip())
        if preset is None:
            raise SessionError(unknown_preset_message(name.strip(), self.presets))
        return preset

    async def apply_preset(
        self, name: str, *, for_new: bool = False, switch_model: bool = True
    ) -> Preset:
        """`/preset NAME`: the preset's model (if it names one), then its settings.
        With `for_new` (`newt --preset`), new conversations start with it too;
        `newt --preset` chose the model before the session opened. A preset with
        `incognito = true` turns incognito on (what was indexed of this
        conversation goes, and /new keeps it on): the user chose it in the config,
        so applying it never leaves a trace in memory; it never turns it off."""
        preset = self.find_preset(name)
        if switch_model and preset.model and preset.model != self.model:
            await self.set_model(preset.model)
        await self.update_settings(preset.settings)
        if for_new:
            self.default_settings = preset.settings
        if preset.incognito and not getattr(self, "incognito", False):
            set_incognito = getattr(self, "set_incognito", None)
            if set_incognito is not None:
                await set_incognito(True)
        return preset

    # -- the backend's models ---------------------------------------------

    async def list_models(self) -> list[ModelChoice]:
        """What the backend serves, with the context window where the list or
        the capability cache knows it. Raises ModelsUnavailable."""
        try:
            listing = await list_models(self.base_url, self.config.api_key)
        except ModelListUnavailable as exc:
            raise ModelsUnavailable(exc.message) from None
        choices: list[ModelChoice] = []
        for served in listing.models:
            window = served.context_window
            if window is None:
                cap = await self.store.capabilities.get(self.base_url, served.id)
                window = cap.context_window if cap else None
            choices.append(ModelChoice(served.id, window, served.detail, served.id == self.model))
        return choices


def shift_anchor(provider: Any, tokens: int) -> None:
    shift = getattr(provider, "shift_anchor", None)
    if shift is not None:
        shift(tokens)
