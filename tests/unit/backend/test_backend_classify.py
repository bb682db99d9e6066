"""classify_error against real error bodies from each backend."""

from __future__ import annotations

import json

import pytest

from newt.backend.classify import classify_error
from newt.backend.errors import (
    AuthenticationError,
    BackendTimeoutError,
    BadRequestError,
    ContextLengthExceededError,
    NotFoundError,
    RateLimitedError,
    ServerError,
    StreamingUnsupportedError,
    ToolsUnsupportedError,
)
from tests.support.fake_openai import OVERFLOW_REPLIES, tools_unsupported

KEY = "sk-test-0123456789SECRET"


def body(obj: object) -> str:
    return obj if isinstance(obj, str) else json.dumps(obj)


# (backend, status, body, prompt_tokens, context_window)
OVERFLOW_CASES = [
    (
        "openai",
        400,
        {
            "error": {
                "message": "Your input exceeds the context window of this model. "
                "Please adjust your input and try again.",
                "type": "invalid_request_error",
                "param": "input",
                "code": "context_length_exceeded",
            }
        },
        None,
        None,
    ),
    (
        "openai legacy",
        400,
        {
            "error": {
                "message": "This model's maximum context length is 4097 tokens, however you "
                "requested 4231 tokens (3975 in your prompt; 256 for the completion). Please "
                "reduce your prompt; or completion length.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        },
        3975,
        4097,
    ),
    (
        "llama-server",
        400,
        {
            "error": {
                "code": 400,
                "message": "request (3024 tokens) exceeds the available context size "
                "(2048 tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 3024,
                "n_ctx": 2048,
            }
        },
        3024,
        2048,
    ),
    (
        "vllm top-level",
        400,
        {
            "object": "error",
            "message": "This model's maximum context length is 2048 tokens. However, you "
            "requested 11352 tokens (11320 in the messages, 32 in the completion). Please "
            "reduce the length of the messages or completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
        11320,
        2048,
    ),
    (
        "vllm wrapped",
        400,
        {
            "error": {
                "message": "This model's maximum context length is 1536 tokens. However, your "
                "request has 4176 input tokens. Please reduce the length of the input messages.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        },
        4176,
        1536,
    ),
    (
        "vllm max_tokens",
        400,
        {
            "error": {
                "message": "'max_tokens' or 'max_completion_tokens' is too large: 8000. This "
                "model's maximum context length is 4096 tokens and your request has 2778 input "
                "tokens (8000 > 4096 - 2778). None",
                "type": "BadRequestError",
                "code": 400,
            }
        },
        2778,
        4096,
    ),
    (
        "vllm ValueError",
        400,
        {
            "object": "error",
            "message": "The prompt (total length 25938) is too long to fit into the model "
            "(context length 4096). Make sure that `max_model_len` is no smaller than the "
            "number of text tokens plus multimodal tokens.",
        },
        25938,
        4096,
    ),
    (
        "lmstudio keep-first",
        400,
        {
            "error": "Trying to keep the first 6547 tokens when context the overflows. However, "
            "the model is loaded with context length of only 4096 tokens, which is not enough. "
            "Try to load the model with a larger context length, or provide a shorter input"
        },
        6547,
        4096,
    ),
    (
        "lmstudio n_keep",
        400,
        {
            "error": "The number of tokens to keep from the initial prompt is greater than the "
            "context length (n_keep: 13055>= n_ctx: 4096). Try to load the model with a larger "
            "context length, or provide a shorter input."
        },
        13055,
        4096,
    ),
    (
        "lmstudio truncate",
        400,
        {"error": "Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)"},
        15028,
        7424,
    ),
    ("lmstudio exceeded", 400, {"error": "Context size has been exceeded."}, None, None),
    (
        "ollama prompt too long",
        400,
        {
            "error": {
                "message": "prompt too long; exceeded max context length by 123 tokens",
                "type": "api_error",
                "param": None,
                "code": None,
            }
        },
        None,
        None,
    ),
    (
        "ollama input length",
        500,
        {"error": "the input length exceeds the context length"},
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("status", "raw", "prompt", "window"),
    [case[1:] for case in OVERFLOW_CASES],
    ids=[case[0] for case in OVERFLOW_CASES],
)
def test_context_overflow_bodies(status: int, raw: object, prompt: int | None, window: int | None):
    err = classify_error(status, body(raw))
    assert isinstance(err, ContextLengthExceededError)
    assert (err.prompt_tokens, err.context_window) == (prompt, window)
    assert err.status == status
    assert not err.retryable  # even a 500: resending the same prompt cannot help
    assert "context window" in err.message
    # advice that can help a message larger than the window too
    assert "split it or use a model with a larger window" in err.message


@pytest.mark.parametrize("backend", sorted(OVERFLOW_REPLIES))
def test_fake_server_overflow_bodies_are_recognised(backend: str):
    reply = OVERFLOW_REPLIES[backend](prompt_tokens=3000, context_window=2048)
    err = classify_error(reply.status, body(reply.body))
    assert isinstance(err, ContextLengthExceededError)
    if backend != "ollama":
        assert (err.prompt_tokens, err.context_window) == (3000, 2048)


def test_overflow_at_prefers_the_prompt_size_and_falls_back_to_the_window():
    both = classify_error(400, body(OVERFLOW_CASES[2][2]))
    assert isinstance(both, ContextLengthExceededError)
    assert both.overflow_at == 3024
    window_only = ContextLengthExceededError("x", context_window=2048)
    assert window_only.overflow_at == 2048


@pytest.mark.parametrize(
    "message",
    [
        "registry.ollama.ai/library/gemma:2b does not support tools",
        "tools param requires --jinja flag",
        '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
        "This model doesn't support tool calling",
        "Unrecognized request argument supplied: tools",
    ],
)
def test_tools_unsupported_only_when_tools_were_sent(message: str):
    raw = body({"error": {"message": message, "type": "invalid_request_error"}})
    err = classify_error(400, raw, sent_tools=True)
    assert isinstance(err, ToolsUnsupportedError)
    assert "continues without tools" in err.message
    assert not err.retryable
    plain = classify_error(400, raw, sent_tools=False)
    assert type(plain) is BadRequestError


def test_fake_tools_unsupported_body():
    reply = tools_unsupported("llama3")
    assert isinstance(classify_error(400, body(reply.body), sent_tools=True), ToolsUnsupportedError)


def test_streaming_refusal_is_its_own_class():
    raw = body({"error": {"message": "Streaming is not supported for this model."}})
    assert isinstance(classify_error(400, raw, sent_stream=True), StreamingUnsupportedError)
    assert type(classify_error(400, raw, sent_stream=False)) is BadRequestError


@pytest.mark.parametrize(
    ("status", "cls", "retryable"),
    [
        (401, AuthenticationError, False),
        (403, AuthenticationError, False),
        (404, NotFoundError, False),
        (408, BackendTimeoutError, True),
        (409, ServerError, True),
        (422, BadRequestError, False),
        (429, RateLimitedError, True),
        (500, ServerError, True),
        (502, ServerError, True),
        (503, ServerError, True),
    ],
)
def test_status_codes(status: int, cls: type, retryable: bool):
    err = classify_error(status, body({"error": {"message": "something"}}))
    assert type(err) is cls
    assert err.retryable is retryable
    assert err.status == status
    assert f"HTTP {status}" in err.message


def test_not_found_names_the_model_and_the_fix():
    raw = body({"error": {"message": "model 'gpt-9' not found", "type": "not_found_error"}})
    err = classify_error(404, raw, model="gpt-9")
    assert isinstance(err, NotFoundError)
    assert "'gpt-9'" in err.message
    assert "[backend] model" in err.message


def test_rate_limit_reads_retry_after():
    err = classify_error(429, "{}", {"Retry-After": "7"})
    assert isinstance(err, RateLimitedError)
    assert err.retry_after == 7.0
    assert "7 s" in err.message
    ms = classify_error(429, "{}", {"retry-after-ms": "250"})
    assert isinstance(ms, RateLimitedError)
    assert ms.retry_after == 0.25


def test_quota_exhausted_is_not_retried():
    raw = body(
        {
            "error": {
                "message": "You exceeded your current quota, please check your plan.",
                "type": "insufficient_quota",
                "code": "insufficient_quota",
            }
        }
    )
    err = classify_error(429, raw)
    assert isinstance(err, RateLimitedError)
    assert not err.retryable
    assert "billing" in err.message


def test_x_should_retry_header_overrides_the_status():
    assert not classify_error(503, "{}", {"x-should-retry": "false"}).retryable
    assert classify_error(400, "{}", {"X-Should-Retry": "true"}).retryable


def test_non_json_body_is_quoted_short():
    html = "<html><body>" + "Bad gateway " * 100 + "</body></html>"
    err = classify_error(502, html)
    assert isinstance(err, ServerError)
    assert "<html><body>Bad gateway" in err.message
    assert len(err.message) < 500


def test_api_key_is_redacted_from_quoted_bodies():
    raw = body({"error": {"message": f"Incorrect API key provided: {KEY}.", "code": "invalid"}})
    err = classify_error(401, raw, secret=KEY)
    assert isinstance(err, AuthenticationError)
    assert KEY not in err.message
    assert KEY not in repr(err)
    assert "[redacted]" in err.message
    assert "OPENAI_API_KEY" in err.message
