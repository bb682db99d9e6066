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

from collections.abc import Sequence
from dataclasses import dataclass

from newt.agent.conversation.log import ConversationLog
from newt.agent.errors import SessionError
from newt.agent.session.model_link import ModelLink
from newt.agent.session.turn_gate import TurnGate
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
    """The settings of the conversation the session holds (ChatSession owns one).

    Handed the config (the presets, the API key), the store, the gate, the
    model link (the provider to re-anchor, the model, its estimate) and the
    conversation's log. A preset that switches the model or turns incognito on
    is applied by the session (ChatSession.apply_preset): those are parts above."""

    def __init__(
        self, config: Config, store: Store, gate: TurnGate, link: ModelLink, log: ConversationLog
    ) -> None:
        self.config = config
        self.store = store
        self.gate = gate
        self.link = link
        self.log = log
        self.default_settings = ChatSettings()
        """What a new conversation starts with (`newt --preset` sets it)."""
        self.stored = StoredSettings()
        """This conversation's settings and the anchor shift they owe."""
        self._unsaved = False

    @property
    def settings(self) -> ChatSettings:
        return self.stored.settings

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

    def for_new(self) -> None:
        self.stored = StoredSettings(self.default_settings)
        self._unsaved = not self.default_settings.is_default

    async def for_loaded(self, conv: Conversation, log: Sequence[StoredTurn]) -> None:
        """After a restore: this conversation's settings, and the anchor shift
        a system prompt changed after its last measured turn still owes."""
        stored = await self.store.settings.get(conv.id)
        self.stored = stored or StoredSettings()
        self._unsaved = False
        self.reapply_anchor_shift(log)

    def reapply_anchor_shift(self, log: Sequence[StoredTurn]) -> None:
        """A working set restored from `log` gets the shift its anchor still owes."""
        stored = self.stored
        if stored.anchor_shift and anchor_is_before(log, stored.shift_after):
            shift_anchor(self.link.provider, stored.anchor_shift)

    async def save_new(self) -> None:
        """The first turn created the conversation: store what was set before it."""
        conv = self.log.conversation
        if self._unsaved and conv is not None:
            await self.store.settings.put(conv.id, self.stored)
            self._unsaved = False

    # -- changing them -----------------------------------------------------

    async def update_settings(self, settings: ChatSettings) -> None:
        """Set this conversation's settings; a new system prompt re-anchors memory."""
        async with self.gate:
            await self._update_settings(settings)

    async def _update_settings(self, settings: ChatSettings) -> None:
        old_prompt = self.system_prompt
        stored = StoredSettings(settings, self.stored.anchor_shift, self.stored.shift_after)
        new_prompt = effective_system_prompt(settings)
        anchored = self.link.provider.anchored()
        if new_prompt != old_prompt and anchored is not None and anchored.last_reported is not None:
            compose = anchored.compose_system_prompt
            tokens_for = self.link.estimate_tokens
            shift = tokens_for(compose(new_prompt)) - tokens_for(compose(old_prompt))
            anchored.shift_anchor(shift)
            conv = self.log.conversation
            newest = (await self.store.turns.shape(conv.id))[1] if conv is not None else None
            if stored.shift_after != newest:  # a turn measured since: start afresh
                stored.anchor_shift, stored.shift_after = 0, newest
            stored.anchor_shift += shift
        self.stored = stored
        conv = self.log.conversation
        if conv is None:
            self._unsaved = True
        else:
            await self.store.settings.put(conv.id, stored)

    def find_preset(self, name: str) -> Preset:
        preset = self.presets.get(name.strip())
        if preset is None:
            raise SessionError(unknown_preset_message(name.strip(), self.presets))
        return preset

    async def use_preset(self, preset: Preset, *, for_new: bool = False) -> None:
        """A preset's settings for this conversation; with `for_new`, new ones
        start with them too. Its model and incognito: ChatSession.apply_preset."""
        await self.update_settings(preset.settings)
        if for_new:
            self.default_settings = preset.settings

    # -- the backend's models ---------------------------------------------

    async def list_models(self) -> list[ModelChoice]:
        """What the backend serves, with the context window where the list or
        the capability cache knows it. Raises ModelsUnavailable."""
        base_url, model = self.link.base_url, self.link.model
        try:
            listing = await list_models(base_url, self.config.api_key)
        except ModelListUnavailable as exc:
            raise ModelsUnavailable(exc.message) from None
        choices: list[ModelChoice] = []
        for served in listing.models:
            window = served.context_window
            if window is None:
                cap = await self.store.capabilities.get(base_url, served.id)
                window = cap.context_window if cap else None
            choices.append(ModelChoice(served.id, window, served.detail, served.id == model))
        return choices


def shift_anchor(provider: MemoryProvider, tokens: int) -> None:
    """Shift a provider's anchor (one anchored on the backend's reported size)."""
    anchored = provider.anchored()
    if anchored is not None:
        anchored.shift_anchor(tokens)
