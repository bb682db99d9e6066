"""How fast a local model read and wrote on this machine, the last time it ran here.

The catalogue's figures were measured once, on an idle 2-core machine; under
load a user saw a third of them. So newt keeps what each model did here:
after every reply from the llama-server it runs, the prompt tokens read a
second and the reply tokens written a second (the turn's own measurements)
go into `speeds.json` in the model cache, by the GGUF's file name, with the
day. The first-run screen and `newt --local --list` show those, and say when;
the catalogue's figure only for a model never run here, saying how it was
measured.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

FILE = "speeds.json"


@dataclass(frozen=True)
class Measured:
    read: float
    """Prompt tokens read a second."""
    write: float
    """Reply tokens written a second."""
    at: float
    """When (seconds since the epoch)."""


def _key(model_file: str) -> str:
    # not Path.stem: "qwen2.5-coder-1.5b-instruct" holds dots of its own
    return Path(model_file).name.removesuffix(".gguf")


def _load(cache: Path) -> dict[str, dict[str, float]]:
    try:
        data = json.loads((cache / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def measured(cache: Path, model_file: str) -> Measured | None:
    """What `model_file` (a GGUF's name, with or without .gguf) did here last, if anything."""
    entry = _load(cache).get(_key(model_file)) or {}
    try:
        return Measured(float(entry["read"]), float(entry["write"]), float(entry["at"]))
    except (KeyError, TypeError, ValueError):
        return None


def record(cache: Path, model_file: str, read: float, write: float) -> None:
    """Keep what `model_file` just did here (a failure to write is not the turn's)."""
    if read <= 0 or write <= 0:
        return
    data = _load(cache)
    data[_key(model_file)] = {"read": round(read, 1), "write": round(write, 1),
                                   "at": round(time.time())}  # fmt: skip
    with contextlib.suppress(OSError):
        cache.mkdir(parents=True, exist_ok=True)
        partial = cache / (FILE + ".part")
        partial.write_text(json.dumps(data, indent=1), encoding="utf-8")
        partial.replace(cache / FILE)
