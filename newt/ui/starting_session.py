"""What the chat screen shows while the agent session is still opening.

NewtApp draws the chat screen before it imports the agent and opens the
session (together ~0.2 s of a cold start), so the prompt takes typing at
once. Until the screen's `attach()` this stands in for the session with what
the screen reads to draw itself (session_api.SessionFace, checked by mypy in
NewtApp); the screen holds back turns, commands and the attachment check until
then, so nothing else of the session is asked of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from newt.config import Config

if TYPE_CHECKING:
    from newt.agent.display import ConversationView, RetentionReport
    from newt.agent.own_memory.status import MemoryStatus


class StartingSession:
    conversation: ConversationView | None = None
    last_retention: RetentionReport | None = None
    incognito: bool = False  # the header says "incognito" once the real session does
    unsaved: bool = False

    def __init__(self, config: Config) -> None:
        self.model = config.backend.model or ""
        self.base_url = config.backend.base_url or ""

    def memory_status(self) -> MemoryStatus:
        # The meter stays empty until the real session reports its budget.
        raise LookupError("the session is still opening")
