"""OpenAI-compatible backend: streaming client, errors, capability probe and cache,
and a managed llama-server. No UI imports here."""

from newt.backend.classify import classify_error
from newt.backend.client import ChatClient
from newt.backend.errors import (
    AuthenticationError,
    BackendError,
    BackendTimeoutError,
    BadRequestError,
    ContextLengthExceededError,
    ImagesUnsupportedError,
    LocalServerError,
    MalformedStreamError,
    NotFoundError,
    RateLimitedError,
    ServerError,
    StreamingUnsupportedError,
    ToolsUnsupportedError,
    UnreachableError,
)
from newt.backend.learned_limits import (
    BudgetResolution,
    record_accepted_prompt,
    record_overflow,
    record_probe,
    record_tools_supported,
    record_tools_unsupported,
    resolve_budget,
)
from newt.backend.probe import ProbeResult, probe_context_window
from newt.backend.types import (
    ChatResult,
    ChatUsage,
    StreamEvent,
    StreamText,
    StreamThinking,
    ToolCall,
)

__all__ = [
    "AuthenticationError",
    "BackendError",
    "BackendTimeoutError",
    "BadRequestError",
    "BudgetResolution",
    "ChatClient",
    "ChatResult",
    "ChatUsage",
    "ContextLengthExceededError",
    "ImagesUnsupportedError",
    "LocalServerError",
    "MalformedStreamError",
    "NotFoundError",
    "ProbeResult",
    "RateLimitedError",
    "ServerError",
    "StreamEvent",
    "StreamText",
    "StreamThinking",
    "StreamingUnsupportedError",
    "ToolCall",
    "ToolsUnsupportedError",
    "UnreachableError",
    "classify_error",
    "probe_context_window",
    "record_accepted_prompt",
    "record_overflow",
    "record_probe",
    "record_tools_supported",
    "record_tools_unsupported",
    "resolve_budget",
]
