"""Turn any exception into one line the user can act on (never a traceback).

newt's own errors (newt.errors.NewtError) say it in their message, with a
hint; anything else is named by its type, for context. The CLI asks the same
mapping (newt.errors.user_message) for its exit status.
"""

from __future__ import annotations

from newt.agent.errors import user_message


def describe(exc: BaseException) -> str:
    known = user_message(exc)
    if known is not None:
        return known[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
