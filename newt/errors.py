"""The root of newt's errors, and the one mapping from an error to what the
user sees: a message, a hint, an exit status.

Every error newt raises for the user to act on is a `NewtError`:

    NewtError                         (exit 1 unless a branch says otherwise)
     ├── BackendError                 backend/errors.py: the server failed or refused
     │    ├── AuthenticationError, RateLimitedError, ServerError, UnreachableError,
     │    │   BackendTimeoutError, MalformedStreamError, BadRequestError
     │    │   (StreamingUnsupportedError), NotFoundError, LocalServerError
     │    └── ContextLengthExceededError, ToolsUnsupportedError, ImagesUnsupportedError
     ├── EmbeddingsError              backend/embeddings.py (Unsupported, Rejected)
     ├── ModelListUnavailable         backend/models.py
     ├── StoreError            exit 2 store/errors.py: NotADatabase, DatabaseTooNew,
     │                                DatabaseBusy, ConversationBusy (writer_lock.py)
     ├── SessionError          exit 2 agent/errors.py: ConversationNotFound,
     │                                AmbiguousConversation, NoBackendConfigured,
     │                                AttachmentError, ModelsUnavailable
     ├── NoteError             exit 2 memory/errors.py: Empty, Duplicate, NotFound,
     │                                Ambiguous, NotesFull; NotesUnsupported
     ├── McpConfigError        exit 2 mcp/config.py
     ├── ConfigError           exit 2 config.py; SettingsError (chat_settings.py)
     ├── ImportFormatError     exit 2 importing/model.py
     ├── LocalModelError              local_models/cli.py (UnknownLocalModel exit 2)
     └── UsageError            exit 2 cli.py

Not under the root: `SetupError` (local_setup/errors.py), because that package
also runs as a standalone script before newt is installed and imports nothing
of newt; its messages are written for the user and the setup screen shows them.

Exit statuses: 0 a whole reply, 1 the backend (or a setup step) failed, 2 bad
input the user can fix, 130 Ctrl-C (the CLI's own). Why one root: the CLI and
the UI ask one question, "is this ours, and what do we say?", instead of
guessing from a module name.
"""

from __future__ import annotations


class NewtError(Exception):
    """An error meant for the user: `user_text()` is the message, `hint` what to do."""

    exit_status = 1
    hint = ""

    def user_text(self) -> str:
        return str(self).strip()


class InputError(NewtError):
    """Bad input the user can fix (exit status 2)."""

    exit_status = 2


def user_message(exc: BaseException) -> tuple[str, int] | None:
    """The message (with its hint) and exit status for one of newt's errors,
    None for anything else (a bug: the caller shows its type)."""
    if not isinstance(exc, NewtError):
        return None
    text = exc.user_text() or type(exc).__name__
    if exc.hint and exc.hint not in text:
        text = f"{text} ({exc.hint})"
    return text, exc.exit_status
