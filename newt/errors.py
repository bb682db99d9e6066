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
     ├── LocalModelError              local/models/cli.py (UnknownLocalModel exit 2)
     ├── DownloadError                local/models/download.py: a model not fetched
     └── InputError            exit 2 bad input the user can fix
          ├── StoreError              store/errors.py: NotADatabaseError,
          │                           DatabaseTooNewError, DatabaseBusyError;
          │                           ConversationBusyError (writer_lock.py),
          │                           NotARecordKey (forgotten.py)
          ├── SessionError            agent/errors.py: ConversationNotFound,
          │                           AmbiguousConversation, NoBackendConfigured;
          │                           AttachmentError (agent/turn/attachments.py),
          │                           ModelsUnavailable (agent/session/settings.py)
          ├── NoteError               memory/errors.py: EmptyNote, DuplicateNote,
          │                           NoteNotFound, NoteAmbiguous, NotesFull;
          │                           and NotesUnsupported beside it
          ├── McpConfigError          mcp/config.py
          ├── ConfigError             config.py; SettingsError (chat_settings.py)
          ├── ImportFormatError       importing/model.py
          ├── UnknownLocalModel       local/models/cli.py (also a LocalModelError)
          └── UsageError              cli/main.py

Not under the root: `SetupError` and `SetupCancelled` (local/setup/errors.py),
because that package also runs as a standalone script before newt is
installed and imports nothing of newt. Its messages are written for the user
and the setup screen shows them; newt code translates at the boundary (a
failed fetch from the package index becomes a DownloadError, a DownloadError
in the setup screen's download a SetupError: agent/local/catalogue.py).
Errors that never reach the user stay private to their module (a file that is
not a GGUF is a ValueError from local/models/gguf.py; the caller skips it).

`hint` is what to do, when the message does not already say it; `user_message`
adds it in parentheses. Most messages say it themselves, so few errors set one.

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


def describe(exc: BaseException) -> str:
    """One line for any exception: one of newt's errors as `user_message` says it,
    anything else (a bug) named by its type, for context."""
    known = user_message(exc)
    if known is not None:
        return known[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
