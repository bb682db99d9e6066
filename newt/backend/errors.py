"""Everything that can go wrong talking to an OpenAI-compatible server.

One hierarchy, so callers can catch ``BackendError`` and show ``.message``::

    BackendError                     .message .retryable .status .partial_text
    ├── AuthenticationError          401 / 403: bad or missing API key
    ├── RateLimitedError             429: .retry_after (seconds or None)
    ├── ServerError                  5xx, 409: the server failed
    ├── UnreachableError             connection refused / dropped before any reply
    ├── BackendTimeoutError          no byte for longer than the read timeout, or 408
    ├── MalformedStreamError         a chunk that is not the JSON we expect
    ├── ContextLengthExceededError   prompt too big: .prompt_tokens, .context_window
    ├── ToolsUnsupportedError        the model or server refuses ``tools``
    ├── ImagesUnsupportedError       the model or server refuses an ``image_url`` part
    ├── BadRequestError              any other 4xx
    │   └── StreamingUnsupportedError    the server refuses ``stream: true``
    ├── NotFoundError                404: usually an unknown model name
    └── LocalServerError             the managed llama-server could not start

``message`` says what happened and what to do about it; it never contains the
API key (the classifier redacts it from server bodies). ``retryable`` tells the
client's retry loop whether another attempt could succeed. ``partial_text`` is
the reply text received before a mid-stream failure, so nothing shown to the
user is lost.
"""

from __future__ import annotations

from newt.errors import NewtError


class BackendError(NewtError):
    """Base class; ``str(err)`` is the user-facing message."""

    default_retryable = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool | None = None,
        partial_text: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = self.default_retryable if retryable is None else retryable
        self.partial_text = partial_text

    def __str__(self) -> str:
        return self.message

    def user_text(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, message={self.message!r})"


class AuthenticationError(BackendError):
    pass


class RateLimitedError(BackendError):
    default_retryable = True

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        status: int | None = 429,
        retryable: bool | None = None,
        partial_text: str = "",
    ) -> None:
        super().__init__(message, status=status, retryable=retryable, partial_text=partial_text)
        self.retry_after = retry_after


class ServerError(BackendError):
    default_retryable = True


class UnreachableError(BackendError):
    default_retryable = True


class BackendTimeoutError(BackendError):
    pass


class MalformedStreamError(BackendError):
    pass


class ContextLengthExceededError(BackendError):
    def __init__(
        self,
        message: str,
        *,
        prompt_tokens: int | None = None,
        context_window: int | None = None,
        status: int | None = None,
        partial_text: str = "",
    ) -> None:
        super().__init__(message, status=status, retryable=False, partial_text=partial_text)
        self.prompt_tokens = prompt_tokens
        self.context_window = context_window

    @property
    def overflow_at(self) -> int | None:
        """The size to record as an overflow: the failed prompt, else the window."""
        return self.prompt_tokens if self.prompt_tokens is not None else self.context_window


class ToolsUnsupportedError(BackendError):
    pass


class ImagesUnsupportedError(BackendError):
    """``detail`` is the server's own words (shown, and remembered per model)."""

    def __init__(self, message: str, *, detail: str = "", status: int | None = None) -> None:
        super().__init__(message, status=status, retryable=False)
        self.detail = detail


class BadRequestError(BackendError):
    pass


class StreamingUnsupportedError(BadRequestError):
    """Raised only inside the client, which then falls back to a non-streamed request."""


class NotFoundError(BackendError):
    pass


class LocalServerError(BackendError):
    pass
