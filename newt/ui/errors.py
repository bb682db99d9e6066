"""Turn any exception into one line the user can act on (never a traceback).

newt's own errors (newt.errors.NewtError) say it in their message, with a
hint; anything else is named by its type, for context. The one mapping is
newt.errors.describe, reached through the agent (the UI imports only it); the
CLI asks the same mapping (newt.errors.user_message) for its exit status.
`NewtError` is the root of those errors: what the UI tells apart by type (an
error of ours reads inline; anything else is a bug and is raised on).
"""

from __future__ import annotations

from newt.agent.errors import NewtError, describe

__all__ = ["NewtError", "describe"]
