"""Turn any exception into one line the user can act on (never a traceback)."""

from __future__ import annotations


def describe(exc: BaseException) -> str:
    text = str(exc).strip()
    # newt's own errors carry user-facing messages; others get their type for context.
    if type(exc).__module__.startswith("newt.") and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
