"""What the client hands back: text and thinking deltas while streaming, then one ChatResult."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class StreamText:
    """A piece of reply text, yielded as soon as it arrives."""

    text: str


@dataclass(frozen=True)
class StreamThinking:
    """A piece of the model's reasoning (``reasoning_content`` or ``<think>`` text).

    Shown apart from the answer, stored with the turn, never sent back."""

    text: str


@dataclass(frozen=True)
class RequestHead:
    """How a chat request starts: its system message and the tools offered.

    A server's prompt cache keeps the start the requests share; a request
    asked beside the chat (a summary) that starts the same way leaves a
    one-slot server that start to read the next chat request from."""

    system: str
    tools: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for.

    ``arguments`` is the parsed JSON object. If the model produced arguments that
    are not a JSON object, ``arguments`` is ``{}``, ``raw_arguments`` keeps what
    it sent and ``arguments_error`` says what was wrong, so the agent loop can
    tell the model instead of crashing.
    """

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str
    arguments_error: str | None = None


@dataclass(frozen=True)
class ChatUsage:
    """The server's own token counts for one request."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None = None


@dataclass
class ChatResult:
    """The whole reply. Always the last event of a stream.

    ``interrupted`` is True when the stream ended without its usage chunk or
    ``[DONE]`` (connection dropped, server stalled): ``text`` then holds what
    arrived, and ``interrupt_reason`` says why.
    """

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: ChatUsage | None = None
    interrupted: bool = False
    interrupt_reason: str | None = None
    thinking: str = ""
    """The reasoning that came with the reply, apart from ``text``."""


@dataclass(frozen=True)
class PromptProgress:
    """How far the server has read the prompt (llama-server's ``prompt_progress``,
    sent while it reads when the request asks with ``return_progress``): tokens
    read of ``total``, ``cache`` of them reused from the last request, ``time_ms``
    since it began reading."""

    total: int
    cache: int
    processed: int
    time_ms: float


StreamEvent = StreamText | StreamThinking | PromptProgress | ChatResult
