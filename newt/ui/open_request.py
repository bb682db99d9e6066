"""What the TUI opens at startup: the command line's choices, carried as data.

`OpenRequest` is what `newt` was asked for (-r/-c, --preset, --incognito);
`open_requested` carries it out on the session once it is open, before the
chat screen takes the session and so before the first turn is sent. Why data
and not a subclass of the app: the front end states a choice, the app owns
its startup, and no one overrides the app's private steps to add one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from newt.ui.errors import describe
from newt.ui.format import clean

if TYPE_CHECKING:
    from newt.agent.own_memory.records import ForgetReport
    from newt.ui.session_api import SessionLike

Notify = Callable[..., Any]
"""The app's `notify` (text, then title, severity, timeout, markup by keyword)."""


@dataclass(frozen=True)
class OpenRequest:
    """The conversation the TUI opens first. `resume`: an id or its prefix;
    `continue_latest`: the newest saved one; `preset`: applied to it and to
    every new one; `incognito`: nothing of it is kept, from before its first
    turn (a resumed one loses what was stored of it)."""

    resume: str | None = None
    continue_latest: bool = False
    preset: str | None = None
    incognito: bool = False


async def open_requested(session: SessionLike, request: OpenRequest, notify: Notify) -> None:
    """Resume or continue, apply the preset, then turn incognito on, saying
    what happened in notifications; a failure is a notification, never an
    error: the chat goes on, on a new conversation or not incognito."""
    try:
        if request.resume:
            await session.conversations.resume(request.resume)
        elif request.continue_latest and await session.conversations.continue_latest() is None:
            notify("No saved conversation yet; starting a new one.")
        if request.preset:  # its model was chosen with the config (newt/cli/main.py)
            await session.apply_preset(request.preset, for_new=True, switch_model=False)
    except Exception as exc:
        notify(describe(exc), title="Could not resume", severity="error", timeout=8, markup=False)
    if not request.incognito:
        return
    try:
        report = await session.forgetting.set_incognito(True)
    except Exception as exc:  # the chat goes on; the user must know it is not incognito
        notify(describe(exc), title="Incognito is off", severity="error", markup=False)
        return
    notify(incognito_notice(report), title="Incognito", markup=False)


def incognito_notice(report: ForgetReport | None) -> str:
    """What `--incognito` says it did: a resumed conversation's removed records."""
    text = (
        "Nothing of this conversation is saved (nor of the ones /new starts);"
        " what you send still goes to the model's server."
    )
    if report is not None:
        text += " What was stored of it is deleted: " + clean(report.describe())
    return text
