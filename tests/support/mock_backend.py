"""An OpenAI-compatible backend inside an httpx.MockTransport, for the client's unit tests.

Why: a test of how newt's HTTP clients read a response needs the bytes a server
sends, not a socket, a thread and a port; the loopback server
(tests/support/fake_openai.py) stays for what only a connection shows (refused
connections, real read timeouts, a closed socket) and for other processes.

Contract: ``MockBackend`` is scripted and inspected as ``FakeOpenAI`` is, with the
same ``Reply`` / ``ErrorReply`` and the same payloads (it builds them with
fake_openai's own functions), so a test moves over by handing the client
``transport=backend.transport``::

    async def test_x(mock_backend: MockBackend):
        mock_backend.script(ErrorReply(429, headers={"Retry-After": "1"}), Reply(text="hi"))
        client = ChatClient(mock_backend.base_url, "fake-model", transport=mock_backend.transport)
        ...
        method, path, headers, body = mock_backend.chat_requests[-1]

Served: ``POST …/chat/completions`` (SSE when the request streams, else one JSON
body; a chat request takes the next scripted reply, or ``default_reply``),
``GET /health``, ``GET /props`` (``n_ctx``; 404 when None), ``GET /v1/models``
(``models``, or ``models_status``'s error), ``GET /api/tags`` when
``ollama_tags`` is set and any ``routes`` entry; anything else is a 404.
Requests are recorded as ``RecordedRequest`` (lower-case header names).

A stream is one SSE event per body piece. ``disconnect_after_chunks`` ends it
with ``httpx.RemoteProtocolError``, as httpx reports a peer that closed
mid-body; ``malformed_at_chunk``, ``error_at_chunk``, ``done`` and ``usage``
behave as in fake_openai. Time is simulated: no pause is waited out; a pause at
least as long as the request's read timeout raises ``httpx.ReadTimeout`` at
that point, as httpcore would on a socket.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from tests.support.fake_openai import (
    ErrorReply,
    RecordedRequest,
    Reply,
    _chunk,
    _completion,
    _last_user_text,
    _stream_events,
    _usage,
)

BASE_URL = "http://newt-mock.invalid/v1"  # .invalid: never resolves, if a test forgets transport=


class MockBackend:
    def __init__(
        self,
        *,
        n_ctx: int | None = 4096,
        model: str = "fake-model",
        default_reply: Reply | None = None,
    ) -> None:
        self.base_url = BASE_URL
        self.n_ctx = n_ctx
        self.model = model
        self.default_reply = default_reply or Reply()
        self.models: list[dict[str, Any]] = [{"id": model, "object": "model"}]
        self.models_status = 200
        self.ollama_tags: list[dict[str, Any]] | None = None
        # (method, path) -> (status, JSON body, or a str sent as it is)
        self.routes: dict[tuple[str, str], tuple[int, Any]] = {}
        self.requests: list[RecordedRequest] = []
        self.transport = httpx.MockTransport(self._handle)
        self._queue: deque[Reply | ErrorReply] = deque()

    def script(self, *replies: Reply | ErrorReply) -> None:
        self._queue.extend(replies)

    @property
    def pending(self) -> int:
        return len(self._queue)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    # -- the transport's handler --

    def _handle(self, request: httpx.Request) -> httpx.Response:
        method, path = request.method, request.url.path
        body: Any = None
        if request.content:
            try:
                body = json.loads(request.content)
            except ValueError:
                body = request.content.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.requests.append(RecordedRequest(method, path, headers, body))
        if (method, path) in self.routes:
            return _json_response(*self.routes[(method, path)])
        if method == "POST" and path.endswith("/chat/completions"):
            return self._chat(request, body if isinstance(body, dict) else {})
        if path == "/health":
            return _json_response(200, {"status": "ok"})
        if path == "/props" and self.n_ctx is not None:
            props = {"default_generation_settings": {"n_ctx": self.n_ctx}, "total_slots": 1}
            return _json_response(200, props)
        if path in ("/v1/models", "/models"):
            if self.models_status != 200:
                error = {"error": {"message": "File Not Found", "code": self.models_status}}
                return _json_response(self.models_status, error)
            return _json_response(200, {"object": "list", "data": self.models})
        if path == "/api/tags" and self.ollama_tags is not None:
            return _json_response(200, {"models": self.ollama_tags})
        return _json_response(404, {"error": {"message": f"no route {method} {path}"}})

    def _chat(self, request: httpx.Request, body: dict[str, Any]) -> httpx.Response:
        reply = self._queue.popleft() if self._queue else self.default_reply
        _pause(request, reply.first_byte_delay_s)
        if isinstance(reply, ErrorReply):
            return _json_response(reply.status, reply.body, reply.headers)
        text = reply.text if reply.text is not None else f"ok: {_last_user_text(body)}"
        if reply.chunks is not None:
            text = "".join(reply.chunks)
        if body.get("stream") is True and not reply.json_body:
            headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
            stream = _SSEStream(self._events(request, reply, text, body))
            return httpx.Response(200, headers=headers, stream=stream)
        return _json_response(200, _completion(reply, text, body, self.model))

    def _events(
        self, request: httpx.Request, reply: Reply, text: str, body: dict[str, Any]
    ) -> Iterator[bytes]:
        """The SSE body, event by event, with fake_openai's faults and pauses."""
        yield from self._prompt_progress(request, reply, text, body)
        sent_content = 0
        for kind, payload in _stream_events(reply, text, body, self.model):
            limit = reply.disconnect_after_chunks
            if kind != "role" and limit is not None and sent_content >= limit:
                raise httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body "
                    "(incomplete chunked read)"
                )
            if kind == "content":
                if sent_content > 0:
                    _pause(request, reply.delay_s)
                if reply.malformed_at_chunk == sent_content:
                    payload = payload[: len(payload) // 2]  # cut JSON: not parseable
                if reply.error_at_chunk == sent_content:
                    payload = json.dumps({"error": reply.error})
                sent_content += 1
            yield f"data: {payload}\n\n".encode()

    def _prompt_progress(
        self, request: httpx.Request, reply: Reply, text: str, body: dict[str, Any]
    ) -> Iterator[bytes]:
        """llama-server's prompt_progress chunks when the request asks for them; without,
        the prompt read is one silence."""
        if reply.prompt_read_s <= 0:
            return
        if not body.get("return_progress"):
            _pause(request, reply.prompt_read_s)
            return
        usage = _usage(reply, text, body)
        total, cache = usage["prompt_tokens"], reply.cached_tokens or 0
        steps = max(1, reply.progress_steps)
        for step in range(1, steps + 1):
            _pause(request, reply.prompt_read_s / steps)
            progress = {
                "total": total,
                "cache": cache,
                "processed": cache + (total - cache) * step // steps,
                "time_ms": reply.prompt_read_s * 1000 * step / steps,
            }
            choices = [{"index": 0, "delta": {"role": "assistant", "content": None}}]
            yield f"data: {_chunk(self.model, choices, prompt_progress=progress)}\n\n".encode()


class _SSEStream(httpx.AsyncByteStream):
    def __init__(self, events: Iterator[bytes]) -> None:
        self._events = events

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for event in self._events:
            yield event


def _pause(request: httpx.Request, seconds: float) -> None:
    """Simulated silence: free unless it outlasts the client's read timeout."""
    read_timeout = request.extensions.get("timeout", {}).get("read")
    if seconds > 0 and read_timeout is not None and seconds >= read_timeout:
        raise httpx.ReadTimeout(f"no data for {read_timeout:g} s", request=request)


def _json_response(
    status: int, payload: Any, headers: dict[str, str] | None = None
) -> httpx.Response:
    data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    return httpx.Response(status, headers=all_headers, content=data)


@pytest.fixture
def mock_backend() -> MockBackend:
    """A fresh MockBackend per test (nothing to stop: no socket, no thread)."""
    return MockBackend()
