"""Which session call a turn of the chat screen consumes: a new prompt, a
regenerate of the last one, or an edit that replaces it."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from newt.agent.events import AgentEvent
from newt.ui.session_api import SessionLike


def turn_events(
    session: SessionLike, text: str, mode: str | None
) -> AsyncGenerator[AgentEvent, None]:
    if mode == "regenerate":
        return session.turns.regenerate()
    if mode == "edit":
        return session.turns.edit_last(text)
    return session.turns.send(text)
