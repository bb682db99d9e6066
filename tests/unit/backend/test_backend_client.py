"""ChatClient's every path: streams, whole bodies, faults, HTTP errors and retries.

The server is tests/support/mock_backend.py inside httpx.MockTransport, since what is
tested is how the client reads what arrives; the last section keeps the loopback
server (tests/support/fake_openai.py) for what only a connection shows: nothing
listening, a read timeout, and closing or cancelling a stream closing the socket.
"""

from __future__ import annotations

import asyncio
import socket
from contextlib import aclosing
from typing import Any

import pytest

from newt.backend.client import ChatClient
from newt.backend.errors import (
    AuthenticationError,
    BackendError,
    BackendTimeoutError,
    BadRequestError,
    ContextLengthExceededError,
    MalformedStreamError,
    NotFoundError,
    RateLimitedError,
    ServerError,
    ToolsUnsupportedError,
    UnreachableError,
)
from newt.backend.types import ChatResult, ChatUsage, StreamEvent, StreamText
from tests.support.fake_openai import (
    OVERFLOW_REPLIES,
    ErrorReply,
    FakeOpenAI,
    Reply,
    tools_unsupported,
)
from tests.support.mock_backend import MockBackend

KEY = "sk-test-0123456789SECRET"
USER = [{"role": "user", "content": "hi there"}]  # 8 chars: the fake counts 2 prompt tokens
TOOLS = [{"type": "function", "function": {"name": "save_note", "parameters": {}}}]


class Sleeps:
    """Stands in for asyncio.sleep so backoff is recorded, not waited."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
async def client(mock_backend: MockBackend, sleeps: Sleeps):
    async with ChatClient(
        mock_backend.base_url, "fake-model", KEY, sleep=sleeps, transport=mock_backend.transport
    ) as c:
        yield c


async def collect(client: ChatClient, **kw: Any) -> list[StreamEvent]:
    messages = kw.pop("messages", USER)
    async with aclosing(client.stream_chat(messages, **kw)) as stream:
        return [event async for event in stream]


def split(events: list[StreamEvent]) -> tuple[list[str], ChatResult]:
    *deltas, result = events
    assert isinstance(result, ChatResult)
    assert all(isinstance(d, StreamText) for d in deltas)
    return [d.text for d in deltas if isinstance(d, StreamText)], result


def assert_no_key(err: BaseException) -> None:
    assert KEY not in str(err)
    assert KEY not in repr(err)
    assert KEY not in getattr(err, "message", "")


# -- happy paths -----------------------------------------------------------------------


async def test_streams_text_deltas_then_one_result(client: ChatClient, mock_backend: MockBackend):
    mock_backend.script(Reply(text="hello world", chunk_size=3))
    deltas, result = split(await collect(client))
    assert deltas == ["hel", "lo ", "wor", "ld"]
    assert result.text == "hello world"
    assert result.finish_reason == "stop"
    assert result.usage == ChatUsage(prompt_tokens=2, completion_tokens=3, cached_tokens=None)
    assert not result.interrupted


async def test_request_body_and_headers(client: ChatClient, mock_backend: MockBackend):
    await collect(client, tools=TOOLS, max_tokens=64, temperature=0.2)
    method, path, headers, body = mock_backend.chat_requests[-1]
    assert (method, path) == ("POST", "/v1/chat/completions")
    assert headers["authorization"] == f"Bearer {KEY}"
    assert body == {
        "model": "fake-model",
        "messages": USER,
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": TOOLS,
        "max_tokens": 64,
        "temperature": 0.2,
    }


async def test_no_tools_key_without_tools_and_no_auth_without_key(mock_backend: MockBackend):
    async with ChatClient(mock_backend.base_url, "m", transport=mock_backend.transport) as anon:
        events = await collect(anon)
    assert split(events)[1].text == "ok: hi there"
    _, _, headers, body = mock_backend.chat_requests[-1]
    assert "tools" not in body
    assert "authorization" not in headers


async def test_cached_tokens_and_explicit_counts(client: ChatClient, mock_backend: MockBackend):
    mock_backend.script(Reply(text="x", prompt_tokens=900, completion_tokens=1, cached_tokens=850))
    _, result = split(await collect(client))
    assert result.usage == ChatUsage(900, 1, 850)


async def test_done_without_usage_chunk_is_complete(client: ChatClient, mock_backend: MockBackend):
    mock_backend.script(Reply(text="fine", usage=False))
    _, result = split(await collect(client))
    assert result.usage is None
    assert not result.interrupted


async def test_tool_call_deltas_across_chunks(client: ChatClient, mock_backend: MockBackend):
    calls = [
        {"id": "call_a", "name": "save_note", "arguments": {"action": "add", "content": "milk"}},
        {"id": "call_b", "name": "recall_memory", "arguments": {"query": "groceries"}},
    ]
    mock_backend.script(Reply(text="", tool_calls=calls, chunk_size=4))
    deltas, result = split(await collect(client, tools=TOOLS))
    assert deltas == []
    assert result.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments, c.arguments_error) for c in result.tool_calls] == [
        ("call_a", "save_note", {"action": "add", "content": "milk"}, None),
        ("call_b", "recall_memory", {"query": "groceries"}, None),
    ]


async def test_tool_call_with_bad_json_keeps_raw(client: ChatClient, mock_backend: MockBackend):
    mock_backend.script(Reply(text="", tool_calls=[{"name": "save_note", "arguments": '{"a": '}]))
    _, result = split(await collect(client, tools=TOOLS))
    (call,) = result.tool_calls
    assert call.arguments == {}
    assert call.raw_arguments == '{"a": '
    assert call.arguments_error is not None


async def test_complete_non_streaming(client: ChatClient, mock_backend: MockBackend):
    mock_backend.script(
        Reply(text="summary", tool_calls=[{"name": "f", "arguments": {"k": 1}}], cached_tokens=1)
    )
    result = await client.complete(USER, max_tokens=10)
    assert result.text == "summary"
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("f", {"k": 1})]
    assert result.usage == ChatUsage(2, 4, 1)
    body = mock_backend.chat_requests[-1].body
    assert body["stream"] is False
    assert "stream_options" not in body
    assert body["max_tokens"] == 10


async def test_server_that_refuses_streaming_gets_a_plain_request(
    client: ChatClient,
    mock_backend: MockBackend,
):
    mock_backend.script(
        ErrorReply(400, {"error": {"message": "Streaming is not supported for this model"}}),
        Reply(text="whole reply"),
    )
    deltas, result = split(await collect(client))
    assert deltas == ["whole reply"]
    assert result.text == "whole reply"
    assert [r.body["stream"] for r in mock_backend.chat_requests] == [True, False]


async def test_server_answering_json_to_a_stream_request(
    client: ChatClient,
    mock_backend: MockBackend,
):
    mock_backend.script(Reply(text="one body", json_body=True))
    deltas, result = split(await collect(client))
    assert deltas == ["one body"]
    assert result.usage is not None


# -- interrupted and malformed streams -------------------------------------------------


async def test_dropped_connection_after_text_is_an_interrupted_result(
    client: ChatClient,
    mock_backend: MockBackend,
):
    mock_backend.script(Reply(text="hello world", chunk_size=3, disconnect_after_chunks=2))
    deltas, result = split(await collect(client))
    assert deltas == ["hel", "lo "]
    assert result.interrupted
    assert result.text == "hello "
    assert result.usage is None
    assert "connection dropped" in (result.interrupt_reason or "")
    assert len(mock_backend.chat_requests) == 1  # never retried once text was shown


async def test_clean_close_without_usage_or_done_is_interrupted(
    client: ChatClient,
    mock_backend: MockBackend,
):
    mock_backend.script(Reply(text="partial", usage=False, done=False))
    _, result = split(await collect(client))
    assert result.interrupted
    assert result.text == "partial"


async def test_drop_before_any_text_is_retried(
    client: ChatClient,
    mock_backend: MockBackend,
    sleeps: Sleeps,
):
    mock_backend.script(Reply(text="lost", disconnect_after_chunks=0), Reply(text="second try"))
    deltas, result = split(await collect(client))
    assert deltas == ["sec", "ond", " tr", "y"]
    assert not result.interrupted
    assert len(mock_backend.chat_requests) == 2
    assert len(sleeps.delays) == 1


async def test_drop_before_any_text_without_retries_raises_unreachable(mock_backend: MockBackend):
    mock_backend.script(Reply(text="lost", disconnect_after_chunks=0))
    async with ChatClient(
        mock_backend.base_url, "m", KEY, max_retries=0, transport=mock_backend.transport
    ) as client:
        with pytest.raises(UnreachableError) as info:
            await collect(client)
    assert "closed the connection before replying" in info.value.message
    assert_no_key(info.value)


async def test_malformed_chunk_raises_with_partial_text(
    client: ChatClient,
    mock_backend: MockBackend,
):
    mock_backend.script(Reply(text="hello world", chunk_size=3, malformed_at_chunk=2))
    seen: list[StreamEvent] = []
    with pytest.raises(MalformedStreamError) as info:
        async with aclosing(client.stream_chat(USER)) as stream:
            async for event in stream:
                seen.append(event)
    assert seen == [StreamText("hel"), StreamText("lo ")]
    assert info.value.partial_text == "hello "
    assert "cannot read" in info.value.message
    assert len(mock_backend.chat_requests) == 1
    assert_no_key(info.value)


async def test_error_event_mid_stream_raises_with_partial_text(
    client: ChatClient,
    mock_backend: MockBackend,
):
    mock_backend.script(Reply(text="hello world", chunk_size=3, error_at_chunk=1))
    with pytest.raises(ServerError) as info:
        await collect(client)
    assert info.value.partial_text == "hel"
    assert "slot crashed" in info.value.message
    assert len(mock_backend.chat_requests) == 1


# -- HTTP errors and retries -----------------------------------------------------------


async def test_401_is_not_retried_and_never_shows_the_key(
    client: ChatClient,
    mock_backend: MockBackend,
    sleeps: Sleeps,
):
    body = {"error": {"message": f"Incorrect API key provided: {KEY}", "code": "invalid_api_key"}}
    mock_backend.script(ErrorReply(401, body))
    with pytest.raises(AuthenticationError) as info:
        await collect(client)
    assert info.value.status == 401
    assert "API key" in info.value.message
    assert_no_key(info.value)
    assert KEY not in repr(client)
    assert len(mock_backend.chat_requests) == 1
    assert sleeps.delays == []


async def test_429_honours_retry_after_then_succeeds(
    client: ChatClient,
    mock_backend: MockBackend,
    sleeps: Sleeps,
):
    mock_backend.script(
        ErrorReply(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "1"}),
        ErrorReply(429, {"error": {"message": "slow down"}}, headers={"retry-after-ms": "250"}),
        Reply(text="finally"),
    )
    _, result = split(await collect(client))
    assert result.text == "finally"
    assert sleeps.delays == [1.0, 0.25]
    assert len(mock_backend.chat_requests) == 3


async def test_429_retries_exhausted_raises_rate_limited(
    client: ChatClient,
    mock_backend: MockBackend,
    sleeps: Sleeps,
):
    limited = ErrorReply(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "2"})
    mock_backend.script(limited, limited, limited)
    with pytest.raises(RateLimitedError) as info:
        await collect(client)
    assert info.value.retry_after == 2.0
    assert sleeps.delays == [2.0, 2.0]


@pytest.mark.parametrize("status", [500, 503])
async def test_5xx_retries_exhausted(
    client: ChatClient,
    mock_backend: MockBackend,
    sleeps: Sleeps,
    status: int,
):
    mock_backend.script(*[ErrorReply(status, {"error": {"message": "overloaded"}})] * 3)
    with pytest.raises(ServerError) as info:
        await collect(client)
    assert info.value.status == status
    assert "overloaded" in info.value.message
    assert len(mock_backend.chat_requests) == 3  # max_retries=2: one try plus two retries
    assert len(sleeps.delays) == 2
    assert 0.375 <= sleeps.delays[0] <= 0.5  # 0.5 s minus up to 25% jitter
    assert 0.75 <= sleeps.delays[1] <= 1.0


async def test_complete_retries_5xx_then_succeeds(
    client: ChatClient,
    mock_backend: MockBackend,
    sleeps: Sleeps,
):
    mock_backend.script(ErrorReply(502, "<html>bad gateway</html>"), Reply(text="ok"))
    result = await client.complete(USER)
    assert result.text == "ok"
    assert len(sleeps.delays) == 1


async def test_invalid_base_url_is_not_retried(sleeps: Sleeps):
    async with ChatClient("localhost:8080/v1", "m", sleep=sleeps) as client:
        with pytest.raises(UnreachableError) as info:
            await client.complete(USER)
    assert "not a valid http(s) URL" in info.value.message
    assert sleeps.delays == []


@pytest.mark.parametrize("backend", sorted(OVERFLOW_REPLIES))
async def test_context_overflow_bodies(
    client: ChatClient,
    mock_backend: MockBackend,
    backend: str,
):
    mock_backend.script(OVERFLOW_REPLIES[backend](prompt_tokens=3000, context_window=2048))
    with pytest.raises(ContextLengthExceededError) as info:
        await collect(client)
    if backend != "ollama":  # Ollama's message carries no sizes
        assert (info.value.prompt_tokens, info.value.context_window) == (3000, 2048)
    assert len(mock_backend.chat_requests) == 1
    assert_no_key(info.value)


async def test_context_overflow_from_complete(client: ChatClient, mock_backend: MockBackend):
    mock_backend.script(OVERFLOW_REPLIES["llama_server"](prompt_tokens=1500, context_window=1024))
    with pytest.raises(ContextLengthExceededError) as info:
        await client.complete(USER)
    assert info.value.overflow_at == 1500


async def test_tools_unsupported(client: ChatClient, mock_backend: MockBackend):
    mock_backend.script(tools_unsupported("fake-model"))
    with pytest.raises(ToolsUnsupportedError) as info:
        await collect(client, tools=TOOLS)
    assert "does not support tools" in info.value.message
    assert len(mock_backend.chat_requests) == 1


async def test_same_body_without_tools_is_a_plain_bad_request(
    client: ChatClient,
    mock_backend: MockBackend,
):
    mock_backend.script(tools_unsupported("fake-model"))
    with pytest.raises(BadRequestError) as info:
        await collect(client)
    assert not isinstance(info.value, ToolsUnsupportedError)


async def test_model_not_found(client: ChatClient, mock_backend: MockBackend):
    mock_backend.script(ErrorReply(404, {"error": {"message": "model not found"}}))
    with pytest.raises(NotFoundError) as info:
        await collect(client)
    assert "'fake-model'" in info.value.message


async def test_every_error_is_a_backend_error():
    for cls in (AuthenticationError, RateLimitedError, UnreachableError, ToolsUnsupportedError):
        assert issubclass(cls, BackendError)


async def test_error_event_without_status_is_a_server_failure(
    client: ChatClient, mock_backend: MockBackend
):
    error = {"message": "context shift failed", "type": "server_error"}
    mock_backend.script(Reply(text="abcdef", error_at_chunk=1, error=error))
    with pytest.raises(ServerError) as info:
        await collect(client)
    assert info.value.status is None
    assert not info.value.retryable
    assert info.value.partial_text == "abc"
    assert "context shift failed" in info.value.message


# -- over a real socket: what only a connection shows ---------------------------------


@pytest.fixture
async def socket_client(fake_openai: FakeOpenAI, sleeps: Sleeps):
    async with ChatClient(fake_openai.base_url, "fake-model", KEY, sleep=sleeps) as c:
        yield c


async def test_unreachable_server_is_retried_then_raised(sleeps: Sleeps):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket closes
    async with ChatClient(f"http://127.0.0.1:{port}/v1", "m", KEY, sleep=sleeps) as client:
        with pytest.raises(UnreachableError) as info:
            await collect(client)
    assert f"127.0.0.1:{port}" in info.value.message
    assert "base_url" in info.value.message
    assert len(sleeps.delays) == 2
    assert_no_key(info.value)


async def test_stall_after_text_is_an_interrupted_result(fake_openai: FakeOpenAI):
    fake_openai.script(Reply(text="abcdef", chunk_size=3, delay_s=30))
    async with ChatClient(fake_openai.base_url, "m", timeout_s=0.3) as client:
        deltas, result = split(await collect(client))
    assert deltas == ["abc"]
    assert result.interrupted
    assert "sent nothing for 0.3 s" in (result.interrupt_reason or "")


async def test_slow_first_byte_times_out_without_retry(
    fake_openai: FakeOpenAI,
    sleeps: Sleeps,
):
    fake_openai.script(Reply(text="late", first_byte_delay_s=30))
    async with ChatClient(fake_openai.base_url, "m", KEY, timeout_s=0.2, sleep=sleeps) as client:
        with pytest.raises(BackendTimeoutError) as info:
            await collect(client)
    assert "timeout_s" in info.value.message
    assert len(fake_openai.chat_requests) == 1
    assert sleeps.delays == []
    assert_no_key(info.value)


async def test_closing_the_stream_closes_the_connection(
    socket_client: ChatClient,
    fake_openai: FakeOpenAI,
):
    fake_openai.script(Reply(text="x" * 5000, chunk_size=1, delay_s=0.02))
    async with aclosing(socket_client.stream_chat(USER)) as stream:
        first = await anext(stream)
    assert first == StreamText("x")
    # The server notices the closed socket before its next chunk, not 100 s later.
    assert await asyncio.to_thread(fake_openai.wait_for_disconnect, 1, 10.0)


async def test_cancelling_the_task_closes_the_connection(
    socket_client: ChatClient,
    fake_openai: FakeOpenAI,
):
    fake_openai.script(Reply(text="y" * 5000, chunk_size=1, delay_s=0.02))
    got_text = asyncio.Event()

    async def consume() -> None:
        async for event in socket_client.stream_chat(USER):
            if isinstance(event, StreamText):
                got_text.set()

    task = asyncio.create_task(consume())
    await got_text.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(fake_openai.wait_for_disconnect, 1, 10.0)
