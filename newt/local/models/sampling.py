"""The sampling a model's publisher recommends, as the defaults of newt's own llama-server.

    Sampling(temperature=0.7, top_p=0.8, top_k=20, repeat_penalty=1.1).server_args()
    # ['--temp', '0.7', '--top-p', '0.8', '--top-k', '20', '--repeat-penalty', '1.1']

A model is trained and evaluated at the sampling its publisher ships with it
(generation_config.json, or the model card's example), while llama-server
samples every model alike unless told otherwise. newt starts its own server
with the model's published values (the catalogue's `[model.sampling]`,
SmolLM2's card for the default model), so a request that sets none, newt's
default, is sampled as the model was meant to be; a conversation's own
temperature and top-p (/settings) still override them per request.
Why: a small model reading recalled lines answers more of them right at its
own sampling than at the server's (docs/benchmarks.md, the user's-life answers).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

# llama-server's flag for each value.
_FLAGS = {
    "temperature": "--temp",
    "top_p": "--top-p",
    "top_k": "--top-k",
    "min_p": "--min-p",
    "repeat_penalty": "--repeat-penalty",
}
# The range each value may take (top_k: a count, the rest real numbers).
_RANGES = {
    "temperature": (0.0, 2.0),
    "top_p": (0.0, 1.0),
    "top_k": (0, 1000),
    "min_p": (0.0, 1.0),
    "repeat_penalty": (0.5, 2.0),
}


@dataclass(frozen=True)
class Sampling:
    """A model's published sampling; None: not stated (the server's own default)."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    repeat_penalty: float | None = None

    def values(self) -> dict[str, float]:
        """The values that are set, by name."""
        named = ((f.name, getattr(self, f.name)) for f in fields(self))
        return {name: value for name, value in named if value is not None}

    def server_args(self) -> list[str]:
        """llama-server's flags for the values that are set, in a fixed order."""
        args: list[str] = []
        for name, value in self.values().items():
            args += [_FLAGS[name], f"{value:g}"]
        return args


def parse_sampling(table: Any, where: str) -> Sampling:
    """A catalogue entry's `[model.sampling]` table; ValueError says what is wrong."""
    if not isinstance(table, dict) or not table:
        raise ValueError(f"{where}: sampling must be a table of values")
    unknown = set(table) - set(_FLAGS)
    if unknown:
        raise ValueError(f"{where}: unknown sampling keys {sorted(unknown)}")
    for key, value in table.items():
        low, high = _RANGES[key]
        whole = isinstance(value, int) and not isinstance(value, bool)
        number = whole or isinstance(value, float)
        if (key == "top_k" and not whole) or not number or not low <= value <= high:
            kind = "a whole number" if key == "top_k" else "a number"
            raise ValueError(f"{where}: sampling {key} must be {kind} from {low:g} to {high:g}")
    top_k = table.get("top_k")
    reals = {k: float(v) for k, v in table.items() if k != "top_k"}
    return Sampling(top_k=top_k, **reals)


# SmolLM2-135M-Instruct, newt's default local model: its generation_config
# states no sampling; its model card generates at these.
SMOLLM2_SAMPLING = Sampling(temperature=0.2, top_p=0.9)
