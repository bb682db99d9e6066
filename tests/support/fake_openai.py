"""A scriptable OpenAI-compatible HTTP server on 127.0.0.1, for tests and benchmarks.

In tests (function-scoped fixture; works in sync and async tests alike)::

    from tests.support.fake_openai import Reply, ErrorReply, fake_openai  # noqa: F401

    async def test_x(fake_openai):
        fake_openai.script(ErrorReply(429, headers={"Retry-After": "1"}), Reply(text="hi"))
        client = ChatClient(fake_openai.base_url, "fake-model")
        ...
        method, path, headers, body = fake_openai.chat_requests[-1]

Each chat request takes the next scripted reply; with the queue empty it gets
``default_reply`` (``Reply()``: "ok: <last user text>"). Header names in
recorded requests are lower-case.

Streaming is real SSE over chunked HTTP/1.1: a role chunk, any ``reasoning``
in ``chunk_size``-character ``reasoning_content`` chunks, the text in
``chunk_size``-character content chunks (or exactly ``chunks``), tool-call deltas, a finish chunk, a
``choices: []`` usage chunk (when the request asked for include_usage) and
``data: [DONE]``. ``disconnect_after_chunks`` / ``malformed_at_chunk`` /
``error_at_chunk`` count
content chunks (text and tool-call pieces) from 0; the role chunk is not
counted. ``delay_s`` is the pause before every content chunk after the first.

Also served: ``GET /health``, ``GET /props`` (``n_ctx``; 404 when None),
``GET /v1/models`` (``models``; ``models_status`` other than 200 answers with
that error, ``models_delay_s`` pauses first), ``GET /api/tags`` in Ollama's
form when ``ollama_tags`` is set, any route put in ``routes``, and for other processes
``POST /__fake__/script`` (a JSON list as for ``--script``) and
``GET /__fake__/requests``. With ``accepts_images=False`` (``--no-images``) a
request carrying an ``image_url`` part gets llama-server's answer for a model
without a multimodal projector (500, ``LLAMA_NO_IMAGES``); otherwise each image
adds ``IMAGE_TOKENS`` to the reported prompt size.

Standalone (another process, e.g. the TUI tmux test)::

    python -m tests.support.fake_openai --port 8099 [--n-ctx 4096] [--reply-text TEXT]
        [--tokens-per-reply N] [--delay S] [--chunk-size N] [--script FILE.json]
        [--models ID[=N_CTX],...] [--models-status 404] [--models-delay S] [--ollama-tags]
        [--no-images]

It prints ``fake_openai listening on http://127.0.0.1:PORT/v1`` once ready.
A script file (or ``$NEWT_FAKE_OPENAI_SCRIPT``) is a JSON list of
``{"type": "reply", ...Reply fields}``, ``{"type": "error", "status": 429, ...}``
or ``{"type": "overflow", "backend": "llama_server", "prompt_tokens": 3000,
"context_window": 2048}``. Unknown llama-server flags (-m, -np, -t) are
accepted and ignored, and ``-c`` sets n_ctx, so it can stand in for the
llama-server binary.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple

# -- what a reply can be ---------------------------------------------------------------


@dataclass
class Reply:
    """A successful reply. ``text=None`` echoes "ok: <last user text>"."""

    text: str | None = None
    chunk_size: int = 3
    # reasoning sent as delta.<reasoning_field> pieces (chunk_size each) before the text;
    # the other form, <think>…</think> inside the content, is just part of ``text``
    reasoning: str | None = None
    reasoning_field: str = "reasoning_content"
    # the content exactly as these pieces (overrides chunk_size for the text)
    chunks: list[str] | None = None
    delay_s: float = 0.0
    usage: bool = True
    prompt_tokens: int | None = None  # None: ceil(chars of the request's messages / 4)
    completion_tokens: int | None = None  # None: ceil(chars of the reply / 4)
    cached_tokens: int | None = None
    # each {"name": str, "arguments": dict | str, "id": str (optional)}; a str is sent as is
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None  # None: "tool_calls" if tool_calls else "stop"
    first_byte_delay_s: float = 0.0
    # the time the server reads the prompt before its first token (a slow CPU), in
    # progress_steps steps: with the request's return_progress each step sends
    # llama-server's prompt_progress chunk; without, it is silence
    prompt_read_s: float = 0.0
    progress_steps: int = 4
    disconnect_after_chunks: int | None = None
    malformed_at_chunk: int | None = None
    # at this content chunk send data: {"error": error} instead (llama-server style)
    error_at_chunk: int | None = None
    error: dict[str, Any] = field(
        default_factory=lambda: {"code": 500, "message": "slot crashed", "type": "server_error"}
    )
    done: bool = True  # send data: [DONE]
    json_body: bool = False  # answer with one chat.completion even when asked to stream


@dataclass
class ErrorReply:
    status: int
    body: dict[str, Any] | str = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    first_byte_delay_s: float = 0.0


def openai_overflow(prompt_tokens: int = 130_000, context_window: int = 128_000) -> ErrorReply:
    message = (
        f"This model's maximum context length is {context_window} tokens. However, your "
        f"messages resulted in {prompt_tokens} tokens. Please reduce the length of the messages."
    )
    body = {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    return ErrorReply(400, body)


def llama_server_overflow(prompt_tokens: int = 3024, context_window: int = 2048) -> ErrorReply:
    message = (
        f"request ({prompt_tokens} tokens) exceeds the available context size "
        f"({context_window} tokens), try increasing it"
    )
    body = {
        "error": {
            "code": 400,
            "message": message,
            "type": "exceed_context_size_error",
            "n_prompt_tokens": prompt_tokens,
            "n_ctx": context_window,
        }
    }
    return ErrorReply(400, body)


def vllm_overflow(prompt_tokens: int = 5000, context_window: int = 4096) -> ErrorReply:
    message = (
        f"This model's maximum context length is {context_window} tokens. However, you "
        f"requested {prompt_tokens + 16} tokens ({prompt_tokens} in the messages, 16 in the "
        "completion). Please reduce the length of the messages or completion."
    )
    body = {"object": "error", "message": message, "type": "BadRequestError", "param": None}
    return ErrorReply(400, {**body, "code": 400})


def lmstudio_overflow(prompt_tokens: int = 6547, context_window: int = 4096) -> ErrorReply:
    message = (
        f"Trying to keep the first {prompt_tokens} tokens when context the overflows. However, "
        f"the model is loaded with context length of only {context_window} tokens, which is not "
        "enough. Try to load the model with a larger context length, or provide a shorter input"
    )
    return ErrorReply(400, {"error": message})


def ollama_overflow(
    prompt_tokens: int | None = None, context_window: int | None = None
) -> ErrorReply:
    # Ollama's message carries no sizes; the arguments exist for a uniform signature.
    message = "prompt too long; exceeded max context length by 123 tokens"
    return ErrorReply(
        400, {"error": {"message": message, "type": "api_error", "param": None, "code": None}}
    )


OVERFLOW_REPLIES: dict[str, Callable[..., ErrorReply]] = {
    "openai": openai_overflow,
    "llama_server": llama_server_overflow,
    "vllm": vllm_overflow,
    "lmstudio": lmstudio_overflow,
    "ollama": ollama_overflow,
}


def tools_unsupported(model: str = "fake-model") -> ErrorReply:
    """Ollama's answer when the model's template has no tool support."""
    body = {
        "error": {
            "message": f"registry.ollama.ai/library/{model} does not support tools",
            "type": "api_error",
            "param": None,
            "code": None,
        }
    }
    return ErrorReply(400, body)


def reply_from_json(item: dict[str, Any]) -> Reply | ErrorReply:
    """One entry of a --script file / POST /__fake__/script."""
    item = dict(item)
    kind = item.pop("type", "reply")
    if kind == "error":
        return ErrorReply(**item)
    if kind == "overflow":
        backend = item.pop("backend", "llama_server")
        return OVERFLOW_REPLIES[backend](**item)
    known = {f.name for f in fields(Reply)}
    return Reply(**{k: v for k, v in item.items() if k in known})


def llama_model_entry(model_id: str, n_ctx: int | None = None) -> dict[str, Any]:
    """A /v1/models entry as llama-server writes it (the live n_ctx under meta)."""
    entry: dict[str, Any] = {"id": model_id, "object": "model", "owned_by": "llamacpp"}
    if n_ctx is not None:
        entry["meta"] = {"n_ctx": n_ctx, "n_ctx_train": n_ctx * 4, "ftype": "Q4_K_M"}
    return entry


def ollama_tag(
    name: str, parameter_size: str = "1B", quantization: str = "Q4_K_M"
) -> dict[str, Any]:
    """An /api/tags entry as Ollama writes it."""
    details = {
        "format": "gguf",
        "parameter_size": parameter_size,
        "quantization_level": quantization,
    }
    return {"name": name, "model": name, "size": 1, "digest": "0" * 12, "details": details}


# -- the server ------------------------------------------------------------------------


class RecordedRequest(NamedTuple):
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # parsed JSON, or the raw text if it was not JSON, or None


class FakeOpenAI:
    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        n_ctx: int | None = 4096,
        model: str = "fake-model",
        default_reply: Reply | None = None,
        accepts_images: bool = True,
    ) -> None:
        self.host = host
        # False: a request with an image part gets llama-server's answer when it
        # has no multimodal projector (500, measured on build 11434).
        self.accepts_images = accepts_images
        self.port = port
        self.n_ctx = n_ctx
        self.model = model
        self.default_reply = default_reply or Reply()
        # Chooses a chat request's reply from the request itself (None: the
        # queue's next); a replay keyed on the user's words needs it, since a
        # summary request can come between two turns.
        self.responder: Callable[[dict[str, Any]], Reply | ErrorReply | None] | None = None
        self.models: list[dict[str, Any]] = [{"id": model, "object": "model"}]
        self.models_status = 200  # e.g. 404: a backend that lists nothing
        self.models_delay_s = 0.0  # e.g. 30: a backend that never answers the list
        self.ollama_tags: list[dict[str, Any]] | None = None  # served at /api/tags when set
        # (method, path) -> (status, JSON body): extra routes, e.g. Ollama's /api/show.
        self.routes: dict[tuple[str, str], tuple[int, Any]] = {}
        # Set to an Event to hold /props (the capability probe) until it is set.
        self.props_gate: threading.Event | None = None
        self.requests: list[RecordedRequest] = []
        self.disconnects = 0  # streams the client closed before we finished
        self._queue: deque[Reply | ErrorReply] = deque()
        self._lock = threading.Lock()
        self._disconnected = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control --

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def script(self, *replies: Reply | ErrorReply) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def wait_for_disconnect(self, count: int = 1, timeout: float = 5.0) -> bool:
        """Block until ``count`` streams were closed by the client (False on timeout)."""
        with self._disconnected:
            return self._disconnected.wait_for(lambda: self.disconnects >= count, timeout)

    def start(self) -> FakeOpenAI:
        self._httpd = _Server(self)
        self.port = self._httpd.server_address[1]
        # A short poll interval makes stop() (and so each test's teardown) quick.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def serve_forever(self) -> None:
        """Standalone mode: serve on this thread until interrupted."""
        self._httpd = _Server(self)
        self.port = self._httpd.server_address[1]
        print(f"fake_openai listening on {self.base_url}", flush=True)
        try:
            self._httpd.serve_forever()
        finally:
            self._stopping.set()
            self._httpd.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- used by the handler threads --

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_reply(self) -> Reply | ErrorReply:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default_reply

    def _note_disconnect(self) -> None:
        with self._disconnected:
            self.disconnects += 1
            self._disconnected.notify_all()

    def _pause(self, seconds: float) -> bool:
        """Sleep unless the server is stopping; False means stop now."""
        return seconds <= 0 or not self._stopping.wait(seconds)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeOpenAI) -> None:
        self.fake = fake
        super().__init__((fake.host, fake.port), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up (resets, broken pipes) are routine here, not test failures.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60  # an idle keep-alive connection does not pin its thread forever

    @property
    def fake(self) -> FakeOpenAI:
        assert isinstance(self.server, _Server)
        return self.server.fake

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
        path = self.path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake = self.fake
        fake._record(RecordedRequest(method, path, headers, body))
        if (method, path) in fake.routes:
            status, payload = fake.routes[(method, path)]
            self._send_json(status, payload)
        elif method == "POST" and path.endswith("/chat/completions"):
            self._chat(body if isinstance(body, dict) else {})
        elif path == "/health":
            self._send_json(200, {"status": "ok"})
        elif path == "/props" and fake.n_ctx is not None:
            while fake.props_gate is not None and not fake.props_gate.wait(0.02):
                if fake._stopping.is_set():
                    return
            props = {"default_generation_settings": {"n_ctx": fake.n_ctx}, "total_slots": 1}
            self._send_json(200, props)
        elif path in ("/v1/models", "/models"):
            if not fake._pause(fake.models_delay_s):
                return
            if fake.models_status != 200:
                error = {"error": {"message": "File Not Found", "code": fake.models_status}}
                self._send_json(fake.models_status, error)
            else:
                self._send_json(200, {"object": "list", "data": fake.models})
        elif path == "/api/tags" and fake.ollama_tags is not None:
            self._send_json(200, {"models": fake.ollama_tags})
        elif method == "POST" and path == "/__fake__/script":
            fake.script(*(reply_from_json(item) for item in (body or [])))
            self._send_json(200, {"queued": fake.pending})
        elif path == "/__fake__/requests":
            self._send_json(200, [r._asdict() for r in fake.requests])
        else:
            self._send_json(404, {"error": {"message": f"no route {method} {path}"}})

    # -- chat completions --

    def _chat(self, request: dict[str, Any]) -> None:
        if not self.fake.accepts_images and _image_parts(request):
            self._send_json(500, LLAMA_NO_IMAGES)
            return
        chosen = self.fake.responder(request) if self.fake.responder is not None else None
        reply = chosen if chosen is not None else self.fake._next_reply()
        if not self.fake._pause(reply.first_byte_delay_s):
            return
        if isinstance(reply, ErrorReply):
            self._send_json(reply.status, reply.body, reply.headers)
            return
        text = reply.text if reply.text is not None else f"ok: {_last_user_text(request)}"
        if reply.chunks is not None:
            text = "".join(reply.chunks)
        if request.get("stream") is True and not reply.json_body:
            self._stream(reply, text, request)
        else:
            self._send_json(200, _completion(reply, text, request, self.fake.model))

    def _stream(self, reply: Reply, text: str, request: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if not self._read_prompt(reply, text, request):
            return
        sent_content = 0
        for kind, payload in _stream_events(reply, text, request, self.fake.model):
            limit = reply.disconnect_after_chunks
            if kind != "role" and limit is not None and sent_content >= limit:
                self._drop_connection()
                return
            if kind == "content":
                if sent_content > 0 and not self.fake._pause(reply.delay_s):
                    return
                if reply.malformed_at_chunk == sent_content:
                    payload = payload[: len(payload) // 2]  # cut JSON: not parseable
                if reply.error_at_chunk == sent_content:
                    payload = json.dumps({"error": reply.error})
                sent_content += 1
            if self._client_gone() or not self._write_chunk(f"data: {payload}\n\n".encode()):
                self.fake._note_disconnect()
                self.close_connection = True
                return
        self._write_chunk(b"")  # the zero-length chunk ends the body cleanly

    def _read_prompt(self, reply: Reply, text: str, request: dict[str, Any]) -> bool:
        """Take `prompt_read_s` as llama-server reads a prompt, reporting progress when
        asked; False when the client hung up meanwhile (noted as a disconnect)."""
        if reply.prompt_read_s <= 0:
            return True
        usage = _usage(reply, text, request)
        total, cache = usage["prompt_tokens"], reply.cached_tokens or 0
        steps = max(1, reply.progress_steps)
        started = time.monotonic()
        for step in range(1, steps + 1):
            if not self.fake._pause(reply.prompt_read_s / steps):
                return False
            sent = True
            if request.get("return_progress"):
                progress = {
                    "total": total,
                    "cache": cache,
                    "processed": cache + (total - cache) * step // steps,
                    "time_ms": (time.monotonic() - started) * 1000,
                }
                delta = {"role": "assistant", "content": None}
                choices = [{"index": 0, "delta": delta}]
                payload = _chunk(self.fake.model, choices, prompt_progress=progress)
                sent = self._write_chunk(f"data: {payload}\n\n".encode())
            if self._client_gone() or not sent:
                self.fake._note_disconnect()
                self.close_connection = True
                return False
        return True

    def _write_chunk(self, data: bytes) -> bool:
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            return True
        except OSError:
            return False

    def _client_gone(self) -> bool:
        """Has the client closed its end? (readable with nothing to read = EOF)"""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _drop_connection(self) -> None:
        """Close mid-body, without the final chunk: the client sees a cut stream."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True


# -- payloads --------------------------------------------------------------------------


def _last_user_text(request: dict[str, Any]) -> str:
    for message in reversed(request.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


LLAMA_NO_IMAGES = {
    "error": {
        "code": 500,
        "message": "image input is not supported - hint: if this is unexpected, "
        "you may need to provide the mmproj",
        "type": "server_error",
    }
}
IMAGE_TOKENS = 256  # what one image adds to prompt_tokens (Gemma 3's projector)


def _image_parts(request: dict[str, Any]) -> int:
    return sum(
        1
        for m in request.get("messages") or []
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for p in m["content"]
        if isinstance(p, dict) and p.get("type") == "image_url"
    )


def _estimate(chars: int) -> int:
    return math.ceil(chars / 4)


def _usage(reply: Reply, text: str, request: dict[str, Any]) -> dict[str, Any]:
    prompt_chars = sum(
        len(_content_text(m.get("content")))
        for m in request.get("messages") or []
        if isinstance(m, dict)
    )
    prompt = reply.prompt_tokens if reply.prompt_tokens is not None else _estimate(prompt_chars)
    if reply.prompt_tokens is None:
        prompt += IMAGE_TOKENS * _image_parts(request)
    args_chars = sum(len(_arguments(c)) for c in reply.tool_calls)
    completion = reply.completion_tokens
    if completion is None:  # reasoning tokens are completion tokens, as real servers count
        completion = _estimate(len(text) + args_chars + len(reply.reasoning or ""))
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if reply.cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
    return usage


def _arguments(call: dict[str, Any]) -> str:
    args = call.get("arguments", {})
    return args if isinstance(args, str) else json.dumps(args)


def _finish_reason(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _chunk(model: str, choices: list[dict[str, Any]], **extra: Any) -> str:
    return json.dumps(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": choices,
            **extra,
        }
    )


def _stream_events(
    reply: Reply, text: str, request: dict[str, Any], model: str
) -> Iterator[tuple[str, str]]:
    """(kind, JSON payload) for every data: line; kind is role|content|finish|usage|done."""
    size = max(1, reply.chunk_size)
    yield "role", _chunk(model, [{"index": 0, "delta": {"role": "assistant", "content": ""}}])
    reasoning = reply.reasoning or ""
    for start in range(0, len(reasoning), size):
        delta = {"content": None, reply.reasoning_field: reasoning[start : start + size]}
        yield "content", _chunk(model, [{"index": 0, "delta": delta, "finish_reason": None}])
    pieces = reply.chunks
    if pieces is None:
        pieces = [text[start : start + size] for start in range(0, len(text), size)]
    for piece in pieces:
        delta = {"content": piece}
        yield "content", _chunk(model, [{"index": 0, "delta": delta, "finish_reason": None}])
    for i, call in enumerate(reply.tool_calls):
        head = {
            "index": i,
            "id": call.get("id", f"call_{i}"),
            "type": "function",
            "function": {"name": call["name"], "arguments": ""},
        }
        yield "content", _chunk(model, [{"index": 0, "delta": {"tool_calls": [head]}}])
        args = _arguments(call)
        for start in range(0, len(args), size):
            part = {"index": i, "function": {"arguments": args[start : start + size]}}
            yield "content", _chunk(model, [{"index": 0, "delta": {"tool_calls": [part]}}])
    finish = [{"index": 0, "delta": {}, "finish_reason": _finish_reason(reply)}]
    yield "finish", _chunk(model, finish)
    wants_usage = bool((request.get("stream_options") or {}).get("include_usage"))
    if reply.usage and wants_usage:
        yield "usage", _chunk(model, [], usage=_usage(reply, text, request))
    if reply.done:
        yield "done", "[DONE]"


def _completion(reply: Reply, text: str, request: dict[str, Any], model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if reply.reasoning:
        message[reply.reasoning_field] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.get("id", f"call_{i}"),
                "type": "function",
                "function": {"name": call["name"], "arguments": _arguments(call)},
            }
            for i, call in enumerate(reply.tool_calls)
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(reply)}],
    }
    if reply.usage:
        body["usage"] = _usage(reply, text, request)
    return body


# -- pytest fixture --------------------------------------------------------------------

try:
    import pytest
except ImportError:  # standalone use without pytest installed
    pass
else:

    @pytest.fixture
    def fake_openai() -> Iterator[FakeOpenAI]:
        """A fresh FakeOpenAI per test, stopped afterwards."""
        server = FakeOpenAI().start()
        try:
            yield server
        finally:
            server.stop()


# -- standalone ------------------------------------------------------------------------

_WORDS = ("one ", "two ", "six ", "ten ", "red ", "sky ", "sea ", "map ")


def generated_text(tokens: int) -> str:
    """About ``tokens`` tokens by the chars/4 rule: four-character words."""
    return "".join(_WORDS[i % len(_WORDS)] for i in range(tokens))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.fake_openai", description=__doc__
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--n-ctx", "-c", "--ctx-size", dest="n_ctx", type=int, default=4096)
    parser.add_argument("--no-props", action="store_true", help="answer /props with 404")
    parser.add_argument("--model-name", default="fake-model")
    parser.add_argument("--reply-text", help="the text of every unscripted reply")
    parser.add_argument("--tokens-per-reply", type=int, help="unscripted replies of N tokens")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds between chunks")
    parser.add_argument("--chunk-size", type=int, default=None)
    parser.add_argument("--script", default=os.environ.get("NEWT_FAKE_OPENAI_SCRIPT"))
    parser.add_argument(
        "--models", help="comma-separated ID[=N_CTX] served at /v1/models (llama-server form)"
    )
    parser.add_argument("--models-status", type=int, default=200, help="e.g. 404: no list")
    parser.add_argument("--models-delay", type=float, default=0.0)
    parser.add_argument(
        "--ollama-tags", action="store_true", help="serve --models at /api/tags, 404 /v1/models"
    )
    parser.add_argument(
        "--no-images", action="store_true", help="refuse image parts as llama-server does"
    )
    args, _ignored = parser.parse_known_args(argv)

    default = Reply(delay_s=args.delay)
    if args.tokens_per_reply is not None:
        default.text, default.chunk_size = generated_text(args.tokens_per_reply), 4
    elif args.reply_text is not None:
        default.text = args.reply_text
    if args.chunk_size is not None:
        default.chunk_size = args.chunk_size
    server = FakeOpenAI(
        args.host,
        args.port,
        n_ctx=None if args.no_props else args.n_ctx,
        model=args.model_name,
        default_reply=default,
        accepts_images=not args.no_images,
    )
    if args.models:
        entries = [item.partition("=") for item in args.models.split(",") if item]
        server.models = [llama_model_entry(i, int(n) if n else None) for i, _, n in entries]
        if args.ollama_tags:
            server.ollama_tags = [ollama_tag(i) for i, _, _ in entries]
            server.models_status = 404
    server.models_status = args.models_status if args.models_status != 200 else server.models_status
    server.models_delay_s = args.models_delay
    if args.script:
        with open(args.script, encoding="utf-8") as f:
            server.script(*(reply_from_json(item) for item in json.load(f)))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
