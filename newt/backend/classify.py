"""Turn an HTTP error (status, headers, body) into the right BackendError.

Pure: no I/O, so every backend's real error body is unit-tested here. The
servers newt talks to disagree on error shapes:

- OpenAI:       {"error": {"message", "type", "code": "context_length_exceeded"}}
- llama-server: {"error": {"code": 400, "message", "type": "exceed_context_size_error",
                           "n_prompt_tokens", "n_ctx"}}
- vLLM:         {"object": "error", "message": "This model's maximum context length is N
                 tokens. However, you requested M tokens (P in the messages, ...)"} or the
                same wrapped in {"error": {...}}
- LM Studio:    {"error": "Trying to keep the first P tokens when context the overflows.
                 However, the model is loaded with context length of only N tokens ..."}
                or "... (n_keep: P>= n_ctx: N) ..."
- Ollama:       {"error": {"message": "prompt too long; exceeded max context length ..."}},
                "the input length exceeds the context length", "<model> does not support tools"
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from newt.backend.errors import (
    AuthenticationError,
    BackendError,
    BackendTimeoutError,
    BadRequestError,
    ContextLengthExceededError,
    ImagesUnsupportedError,
    NotFoundError,
    RateLimitedError,
    ServerError,
    StreamingUnsupportedError,
    ToolsUnsupportedError,
)
from newt.backend.retry import is_retryable_status, parse_retry_after
from newt.text import strip_terminal_escapes

_DETAIL_LIMIT = 300

_OVERFLOW_PHRASES = re.compile(
    r"context_length_exceeded|exceed_context_size|maximum context length|"
    r"context length exceeded|exceeds? the (available )?context (size|length|window)|"
    r"context size has been exceeded|when context (the )?overflows|n_keep|"
    r"number of tokens to keep|prompt (is )?too long|exceeds? context|"
    r"exceeded max context length|too long to fit into the model|input is too long",
    re.IGNORECASE,
)

# Checked in order; the first match wins. "P in the messages" beats "you requested M"
# because M also counts the reply reserve, and the overflow we record is the prompt.
_PROMPT_SIZE = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"request \((\d+) tokens\) exceeds",
        r"(\d+) in the messages",
        r"(\d+) in your prompt",
        r"request has (\d+) input tokens",
        r"resulted in (\d+) tokens",
        r"you requested (\d+) tokens",
        r"keep the first (\d+) tokens",
        r"n_keep\W*(\d+)",
        r"prompt \(total length (\d+)\)",
        r"prompt is too long: (\d+) tokens",
    )
]
_CONTEXT_SIZE = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"maximum context length is (\d+)",
        r"available context size \((\d+) tokens\)",
        r"context length of only (\d+)",
        r"n_ctx\W*(\d+)",
        r"\(context length (\d+)\)",
        r"tokens > (\d+) maximum",
    )
]

_TOOLS_REFUSED = re.compile(
    r"(does not|doesn't|do not) support (tools|tool calling|tool use|function calling)|"
    r"tools? (calling |use )?(is |are )?not supported|function calling is not supported|"
    r"tools param requires|enable-auto-tool-choice|tool-call-parser|"
    r"(unrecognized|unsupported|unknown) (request )?(argument|parameter)[^.]*\btools\b",
    re.IGNORECASE,
)

# llama-server without --mmproj answers 500 "image input is not supported - hint:
# ... provide the mmproj" (measured, build 11434); the others are the words of
# OpenAI, vLLM, Ollama and LM Studio for a text-only model.
_IMAGES_REFUSED = re.compile(
    r"image input is not supported|(does not|doesn't|do not) support (images?|vision)|"
    r"image_url is only supported|not a multimodal model|images? (are|is) not supported|"
    r"multimodal (input )?is not (supported|enabled)|unsupported content type.{0,20}image",
    re.IGNORECASE,
)

_STREAM_REFUSED = re.compile(
    r"stream(ing)?\b[^.]{0,40}\bnot (supported|allowed|available)|"
    r"(does not|doesn't) support stream",
    re.IGNORECASE,
)


def classify_error(
    status: int | None,
    body: str,
    headers: Mapping[str, str] | None = None,
    *,
    sent_tools: bool = False,
    sent_stream: bool = False,
    sent_images: bool = False,
    model: str | None = None,
    secret: str | None = None,
) -> BackendError:
    """The BackendError for one failed response.

    ``sent_tools`` / ``sent_stream``: whether the request carried ``tools`` /
    ``stream: true``, so a refusal of either can be told apart from other 400s.
    ``secret`` (the API key) is scrubbed from anything quoted from the body.
    """
    message, code, kind, fields = _parse_body(body)
    if secret:
        message = message.replace(secret, "[redacted]")
    # the body is the server's text: it must not carry escape sequences to a terminal
    message = strip_terminal_escapes(message)
    detail = _shorten(message)
    suffix = f": {detail}" if detail else ""
    label = f"HTTP {status}" if status is not None else "reported in the stream"
    retryable = is_retryable_status(status) if status is not None else False
    should_retry = _header(headers, "x-should-retry")

    overflow = _context_overflow(message, code, kind, fields)
    if overflow is not None:
        prompt, window = overflow
        return ContextLengthExceededError(
            _overflow_message(prompt, window, detail),
            prompt_tokens=prompt,
            context_window=window,
            status=status,
        )
    if sent_tools and _TOOLS_REFUSED.search(message):
        return ToolsUnsupportedError(
            f"The model does not accept tools ({label}){suffix}. "
            "newt continues without tools for this model.",
            status=status,
        )
    if sent_images and _IMAGES_REFUSED.search(message):
        return ImagesUnsupportedError(
            f"The model does not accept images ({label}){suffix}.", detail=detail, status=status
        )
    if sent_stream and _STREAM_REFUSED.search(message):
        return StreamingUnsupportedError(
            f"The server refused to stream ({label}){suffix}.", status=status
        )

    err: BackendError
    if status in (401, 403):
        err = AuthenticationError(
            f"The server rejected the credentials ({label}){suffix}. Check the API key "
            "(the environment variable named by [backend] api_key_env, OPENAI_API_KEY by "
            "default) and that this key may use the model.",
            status=status,
        )
    elif status == 404:
        named = f"model '{model}'" if model else "the model"
        err = NotFoundError(
            f"The server does not know {named} ({label}){suffix}. Check [backend] model "
            "(or --model), and that [backend] base_url is right (it usually ends in /v1).",
            status=status,
        )
    elif status == 408:
        err = BackendTimeoutError(
            f"The server timed out the request ({label}){suffix}. Try again.",
            status=status,
            retryable=True,
        )
    elif status == 429:
        retry_after = parse_retry_after(headers)
        quota = "insufficient_quota" in (code, kind)
        wait = f" The server asked to wait {retry_after:g} s." if retry_after else ""
        hint = (
            " The account is out of quota: check the plan and billing."
            if quota
            else " Wait a moment and try again."
        )
        err = RateLimitedError(
            f"Rate limited by the server ({label}){suffix}.{wait}{hint}",
            retry_after=retry_after,
            status=status,
            retryable=not quota,
        )
    elif status is None or status >= 500 or status == 409:
        # No status: an error event inside a 200 stream, i.e. the server failed mid-reply.
        again = (
            "newt retries this; if it keeps failing"
            if retryable
            else "Try again; if it fails again"
        )
        err = ServerError(
            f"The server failed ({label}){suffix}. {again}, check the server's logs.",
            status=status,
            retryable=retryable,
        )
    else:
        err = BadRequestError(f"The server rejected the request ({label}){suffix}.", status=status)
    if should_retry in ("true", "false"):
        # OpenAI's explicit override beats our guess from the status code.
        err.retryable = should_retry == "true"
    return err


def _parse_body(body: str) -> tuple[str, str, str, dict[str, Any]]:
    """(message, code, type, fields) from whichever error shape the server used."""
    text = body.strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text, "", "", {}
    if not isinstance(data, dict):
        return text, "", "", {}
    err = data.get("error", data)
    if isinstance(err, str):
        return err, _str(data.get("code")), _str(data.get("type")), data
    if not isinstance(err, dict):
        return text, "", "", {}
    message = err.get("message") or err.get("detail") or err.get("msg") or ""
    if not isinstance(message, str):
        message = json.dumps(message)
    return message, _str(err.get("code")), _str(err.get("type")), err


def _context_overflow(
    message: str, code: str, kind: str, fields: Mapping[str, Any]
) -> tuple[int | None, int | None] | None:
    """(prompt_tokens, context_window) if this is a context overflow, else None."""
    if not (
        code == "context_length_exceeded"
        or kind == "exceed_context_size_error"
        or _OVERFLOW_PHRASES.search(message)
    ):
        return None
    prompt = _as_int(fields.get("n_prompt_tokens")) or _first_int(_PROMPT_SIZE, message)
    window = _as_int(fields.get("n_ctx")) or _first_int(_CONTEXT_SIZE, message)
    return prompt, window


def _overflow_message(prompt: int | None, window: int | None, detail: str) -> str:
    if prompt is not None and window is not None:
        what = (
            f"The prompt ({prompt} tokens) is larger than the model's context window "
            f"({window} tokens)"
        )
    elif window is not None:
        what = f"The prompt is larger than the model's context window ({window} tokens)"
    else:
        what = f"The prompt is larger than the model's context window ({detail})"
    return (
        f"{what}. newt folded older turns and tried again. If your message alone is"
        " this large, split it or use a model with a larger window; if short messages"
        " hit it too, lower [memory] context_tokens to what the server really holds."
    )


def _first_int(patterns: list[re.Pattern[str]], text: str) -> int | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return None


def _as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str:
    return "" if value is None else str(value)


def _header(headers: Mapping[str, str] | None, name: str) -> str | None:
    if not headers:
        return None
    for key, value in headers.items():
        if key.lower() == name:
            return value.strip().lower()
    return None


def _shorten(message: str) -> str:
    flat = " ".join(message.split())
    return flat if len(flat) <= _DETAIL_LIMIT else flat[: _DETAIL_LIMIT - 1] + "…"
