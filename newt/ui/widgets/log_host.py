"""What the widgets of a message ask of the log that holds them, declared below both.

ChatLog (chat_log.py) is a LogHost. The widgets inside it find it among their
ancestors with `isinstance` and read what they need: a thinking block whether
blocks show unfolded (ctrl+t), a streaming reply whether the user scrolled away
(it then waits instead of laying out), a fold line the conversation's folds. They
never import chat_log.py, which imports them. A widget outside any log (a test's
host app) keeps its defaults.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from newt.agent.display import FoldView


class LogHost:
    thinking_expanded: bool = False
    """Thinking blocks show unfolded (ctrl+t); blocks mounted later follow."""

    def scrolled_away(self) -> bool:
        """The user moved up from the bottom: a streaming reply below waits."""
        return False

    async def load_folds(self) -> list[FoldView] | None:
        """The conversation's folds as its durable log has them now (None: no log)."""
        return None
