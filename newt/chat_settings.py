"""Per-conversation settings and the named presets of the config.

`ChatSettings` is what one conversation asks of the model: its own system
prompt, temperature, top_p and a cap on reply tokens. None means "not set":
newt's own system prompt, the backend's defaults, and no cap. Only what is set
goes into a request.

A preset is a `[presets.NAME]` table in the config: the same four keys plus an
optional `model` and `incognito`. Applying one sets the conversation's settings
(and model); `incognito = true` keeps the conversation out of memory.

Kept beside newt/config.py rather than inside newt/agent: the config parses
presets with it, and the agent layer imports the config, not the other way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from newt.errors import InputError

TEMPERATURE_RANGE = (0.0, 2.0)
MAX_REPLY_TOKENS_LIMIT = 1_000_000
SETTING_KEYS = ("system_prompt", "temperature", "top_p", "max_tokens")
PRESET_KEYS = (*SETTING_KEYS, "model", "incognito")


class SettingsError(InputError, ValueError):
    """A setting out of range or of the wrong kind; the message is for the user."""


@dataclass(frozen=True)
class ChatSettings:
    system_prompt: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    preset: str | None = None
    """The preset these came from, shown to the user; editing keeps it."""

    def request_options(self) -> dict[str, Any]:
        """What goes into the chat request: only the parameters that are set."""
        options: dict[str, Any] = {}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        if self.top_p is not None:
            options["top_p"] = self.top_p
        if self.max_tokens is not None:
            options["max_tokens"] = self.max_tokens
        return options

    def with_values(self, **values: Any) -> ChatSettings:
        return replace(self, **values)

    @property
    def is_default(self) -> bool:
        return self == ChatSettings()


@dataclass(frozen=True)
class Preset:
    name: str
    settings: ChatSettings = field(default_factory=ChatSettings)
    model: str | None = None
    incognito: bool = False
    """Applying it keeps the conversation out of memory (it never turns that off)."""


def check_temperature(value: Any) -> float | None:
    number = _number(value, "temperature")
    if number is not None and not TEMPERATURE_RANGE[0] <= number <= TEMPERATURE_RANGE[1]:
        raise SettingsError(f"temperature must be between 0 and 2, not {value!r}")
    return number


def check_top_p(value: Any) -> float | None:
    number = _number(value, "top_p")
    if number is not None and not 0.0 < number <= 1.0:
        raise SettingsError(f"top_p must be above 0 and at most 1, not {value!r}")
    return number


def check_max_tokens(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise SettingsError(f"max_tokens must be a whole number, not {value!r}")
    if not 1 <= value <= MAX_REPLY_TOKENS_LIMIT:
        raise SettingsError(f"max_tokens must be between 1 and {MAX_REPLY_TOKENS_LIMIT:,}")
    return value


def check_system_prompt(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise SettingsError(f"system_prompt must be a string, not {value!r}")
    return value.strip() or None


def _number(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SettingsError(f"{name} must be a number, not {value!r}")
    return float(value)


def settings_from_form(
    system_prompt: str, temperature: str, top_p: str, max_tokens: str, preset: str | None = None
) -> ChatSettings:
    """The settings screen's text fields; an empty field means "not set"."""

    def parse(text: str, kind: Callable[[str], Any], name: str) -> Any:
        text = text.strip()
        if not text:
            return None
        try:
            return kind(text)
        except ValueError:
            noun = "a whole number" if kind is int else "a number"
            raise SettingsError(f"{name} must be {noun}, not {text!r}") from None

    return ChatSettings(
        system_prompt=check_system_prompt(system_prompt),
        temperature=check_temperature(parse(temperature, float, "temperature")),
        top_p=check_top_p(parse(top_p, float, "top_p")),
        max_tokens=check_max_tokens(parse(max_tokens, int, "max_tokens")),
        preset=preset,
    )


def parse_presets(body: Any, where: Callable[[str], str]) -> dict[str, Preset]:
    """`[presets.NAME]` tables -> presets; `where(dotted)` names file and line."""
    if not isinstance(body, Mapping):
        raise SettingsError(f"{where('presets')} must be a table of [presets.NAME] tables")
    presets: dict[str, Preset] = {}
    checks: dict[str, Callable[[Any], Any]] = {
        "system_prompt": check_system_prompt,
        "temperature": check_temperature,
        "top_p": check_top_p,
        "max_tokens": check_max_tokens,
    }
    for name, table in body.items():
        if not isinstance(table, Mapping):
            raise SettingsError(f"{where(f'presets.{name}')} must be a table ([presets.{name}])")
        if not str(name).strip() or any(c.isspace() for c in str(name)):
            raise SettingsError(f"{where(f'presets.{name}')}: a preset name has no spaces")
        values: dict[str, Any] = {}
        for key, value in table.items():
            dotted = f"presets.{name}.{key}"
            if key not in PRESET_KEYS:
                raise SettingsError(
                    f"{where(dotted)} is not a known key; a preset has " + ", ".join(PRESET_KEYS)
                )
            if key == "model":
                if not isinstance(value, str) or not value.strip():
                    raise SettingsError(f"{where(dotted)} must be a model name")
                continue
            if key == "incognito":
                if not isinstance(value, bool):
                    raise SettingsError(f"{where(dotted)} must be true or false")
                continue
            try:
                values[key] = checks[key](value)
            except SettingsError as exc:
                raise SettingsError(f"{where(dotted)}: {exc}") from None
        model = table.get("model")
        presets[str(name)] = Preset(
            str(name),
            ChatSettings(**values, preset=str(name)),
            model.strip() if model else None,
            incognito=table.get("incognito") is True,
        )
    return presets


def unknown_preset_message(name: str, known: Mapping[str, Preset]) -> str:
    if not known:
        return f"no preset named {name!r}: the config has no [presets.NAME] tables"
    return f"no preset named {name!r}; known presets: " + ", ".join(sorted(known))
