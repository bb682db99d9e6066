"""Problems with a request to the session that the user can fix (bad id, no backend)."""

from __future__ import annotations

from newt.config import Config
from newt.errors import InputError, NewtError, describe, user_message
from newt.store import Conversation, Store


class SessionError(InputError):
    """A user-facing problem with a request to the session (bad id, no backend...)."""


class ConversationNotFound(SessionError):
    hint = "`newt list` shows the saved ones"


class AmbiguousConversation(SessionError):
    pass


class NoBackendConfigured(SessionError):
    pass


async def resolve_conversation(store: Store, prefix: str) -> Conversation:
    """The one conversation whose id starts with `prefix`."""
    prefix = prefix.strip()
    if not prefix:
        raise ConversationNotFound("no conversation id given")
    found = await store.conversations.find_by_prefix(prefix)
    if not found:
        raise ConversationNotFound(f"no conversation with id {prefix!r}")  # and the hint
    if len(found) > 1:
        ids = ", ".join(c.id[:12] for c in found[:5])
        raise AmbiguousConversation(
            f"{len(found)} conversations start with {prefix!r} ({ids}); give more characters"
        )
    return found[0]


def require_backend(config: Config) -> None:
    """Refuse to open a session without a base URL and a model, saying where to set them."""
    if not config.backend.base_url:
        raise NoBackendConfigured(
            "no backend configured: set [backend] base_url in "
            f"{config.path}, OPENAI_BASE_URL, or pass --base-url (or try `newt --local`)"
        )
    if not config.backend.model:
        raise NoBackendConfigured(
            f"no model configured: set [backend] model in {config.path} or pass --model"
        )


# for the UI, which imports only the agent
__all__ = ["NewtError", "describe", "user_message"]
