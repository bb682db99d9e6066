"""Read the texts shipped in assets/ (installed as the package `newt.assets`)."""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def asset_text(name: str) -> str:
    """The text of assets/<name>, e.g. "compaction_prompt.md"."""
    return files("newt.assets").joinpath(name).read_text(encoding="utf-8")
