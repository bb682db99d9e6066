"""How every setup step reports how far it is: one `Progress` record to a callback.

The first-run screen draws it as a progress bar, the command line prints it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    step: str  # "llama-server" or "model"
    message: str  # one line for a person
    fraction: float  # 0..1 of this step
    eta_s: float | None  # seconds left in this step, when known


ProgressFn = Callable[[Progress], None]


def quiet(_: Progress) -> None:
    """The callback of a caller that does not watch."""
