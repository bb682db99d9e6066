"""Map errors from lower layers to (one-line message, exit status) for the CLI."""

from __future__ import annotations


def user_message(exc: BaseException) -> tuple[str, int] | None:
    """The message and exit status for a known error, None for a bug."""
    from newt.agent.session import SessionError
    from newt.backend.errors import BackendError

    if isinstance(exc, SessionError):
        return str(exc), 2
    if isinstance(exc, BackendError):  # LocalServerError included
        return exc.message, 1
    return None
