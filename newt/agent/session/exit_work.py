"""What a session leaves when its process exits, and who finishes it.

Print mode gives the shell its prompt back as soon as the reply is out; a
summary a fold still owes, and the records not yet embedded, are then finished
by a detached newt (newt.cli.detached_writers). The session decides what is
owed (ChatSession.finish_owed); a Handoff is only how it is passed on. Why:
the front end holds no memory policy, and a test can pass its own handoff.
"""

from __future__ import annotations

from typing import Protocol

from newt.backend.types import RequestHead


class Handoff(Protocol):
    """Who finishes, after this process, what it leaves."""

    def summary(self, conversation_id: str, head: RequestHead | None) -> None:
        """Write the summary `conversation_id` owes; `head`: the chat request's start."""

    def vectors(self) -> None:
        """Embed the records still without a vector."""
