"""The OpenAI-compatible chat client: streaming, retries, timeouts, cancellation.

Retry policy (like the official OpenAI client): 408, 409, 429, 5xx and
connection failures are retried up to ``max_retries`` times with exponential
backoff and jitter, or after the server's ``Retry-After`` / ``retry-after-ms``
(capped at 60 s). Retries happen only before the first event reaches the
caller, so a reply is never shown twice. A read timeout (the server went quiet
for ``timeout_s``) is not retried: resending the same prompt to a server that
is still busy with it only queues more work.

Once text has arrived, a dropped connection or a stall does not raise: the
stream ends with ``ChatResult(interrupted=True)`` holding the partial text.

Cancellation: the stream is an async generator holding the HTTP response open;
cancelling the consuming task, or closing the generator (``aclose()``, or
``contextlib.aclosing`` around the ``async for``), closes the response and its
connection at once. Breaking out of ``async for`` without closing leaves the
close to the garbage collector, so use ``aclosing``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import Any

import httpx

from newt.backend.classify import classify_error
from newt.backend.errors import (
    BackendError,
    BackendTimeoutError,
    RateLimitedError,
    StreamingUnsupportedError,
    UnreachableError,
)
from newt.backend.http import async_client
from newt.backend.response import (
    StreamAccumulator,
    malformed_chunk,
    parse_completion,
    parse_prompt_progress,
)
from newt.backend.retry import backoff_delay
from newt.backend.sse import SSEEvent, iter_sse
from newt.backend.types import ChatResult, RequestHead, StreamEvent, StreamText, StreamThinking

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5.0
_ERROR_BODY_LIMIT = 64 * 1024

Sleep = Callable[[float], Awaitable[None]]


class ChatClient:
    """Talks to ``{base_url}/chat/completions``; base_url normally ends in ``/v1``."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Sleep | None = None,
        prompt_progress: bool = False,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.chat_head: RequestHead | None = None  # the last streamed chat request's start
        self.prompt_progress = prompt_progress  # llama-server's return_progress (only there)
        self.model = model
        self.timeout_s = timeout_s
        self.max_retries = max(0, max_retries)
        # Replaced in tests so retry backoff costs no wall time.
        self.sleep: Sleep = sleep or asyncio.sleep
        self._api_key = api_key or None
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = async_client(
            timeout=httpx.Timeout(timeout_s, connect=CONNECT_TIMEOUT_S),
            transport=transport,
            headers=headers,
        )

    def __repr__(self) -> str:
        return f"ChatClient(base_url={self.base_url!r}, model={self.model!r})"

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- public API -------------------------------------------------------------

    async def stream_chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Yield StreamThinking / StreamText as they arrive, then exactly one ChatResult."""
        body = self._body(messages, tools, max_tokens, temperature, stream=True, top_p=top_p)
        if messages and messages[0].get("role") == "system":
            self.chat_head = RequestHead(str(messages[0].get("content") or ""), tools or None)
        attempt = 0
        while True:
            yielded = False
            try:
                async with aclosing(self._stream_attempt(body)) as events:
                    async for event in events:
                        yielded = True
                        yield event
                return
            except StreamingUnsupportedError:
                if yielded:
                    raise
                break
            except BackendError as err:
                if yielded or not self._should_retry(err, attempt):
                    raise
                delay = self._retry_delay(err, attempt)
            await self.sleep(delay)
            attempt += 1
        # The server refuses to stream: ask again without streaming.
        result = await self.complete(
            messages, tools=tools, max_tokens=max_tokens, temperature=temperature, top_p=top_p
        )
        for delta in _whole_deltas(result):
            yield delta
        yield result

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        tool_choice: str | None = None,
    ) -> ChatResult:
        """One non-streamed request (the summarizer, and servers that refuse to stream)."""
        body = self._body(messages, tools, max_tokens, temperature, stream=False, top_p=top_p)
        if tools and tool_choice is not None:
            body["tool_choice"] = tool_choice
        attempt = 0
        while True:
            try:
                return await self._complete_attempt(body)
            except BackendError as err:
                if not self._should_retry(err, attempt):
                    raise
                delay = self._retry_delay(err, attempt)
            await self.sleep(delay)
            attempt += 1

    # -- one attempt ------------------------------------------------------------

    async def _stream_attempt(self, body: dict[str, Any]) -> AsyncGenerator[StreamEvent, None]:
        response = await self._send(body)
        try:
            if "application/json" in response.headers.get("content-type", ""):
                # The server ignored stream: true and answered in one body.
                result = await self._read_completion(response)
                for delta in _whole_deltas(result):
                    yield delta
                yield result
                return
            acc = StreamAccumulator()
            reason: str | None = None
            try:
                async for event in iter_sse(response.aiter_lines()):
                    if event.data.strip() == "[DONE]":
                        acc.done = True
                        break
                    chunk = self._decode(event, acc)
                    if chunk is None:
                        reason = "the connection closed in the middle of a chunk"
                        break
                    progress = parse_prompt_progress(chunk)
                    if progress is not None:
                        yield progress
                    for delta in acc.feed_deltas(chunk):
                        yield delta
            except httpx.TimeoutException:
                if not acc.has_content:
                    raise self._timeout_error() from None
                reason = f"the server sent nothing for {self.timeout_s:g} s"
            except httpx.TransportError as exc:
                if not acc.has_content:
                    raise self._dropped_error(exc) from None
                reason = f"the connection dropped mid-reply ({type(exc).__name__})"
            for delta in acc.flush():  # a tag's first characters held back at the end
                yield delta
            if acc.complete:
                yield acc.result()
            elif acc.has_content:
                yield acc.result(interrupted=True, reason=reason or "the stream ended early")
            else:
                raise self._dropped_error(None)
        finally:
            await response.aclose()

    async def _complete_attempt(self, body: dict[str, Any]) -> ChatResult:
        response = await self._send(body)
        try:
            return await self._read_completion(response)
        finally:
            await response.aclose()

    async def _send(self, body: dict[str, Any]) -> httpx.Response:
        """POST the request; return the open response or raise the classified error."""
        url = f"{self.base_url}/chat/completions"
        try:
            request = self._http.build_request("POST", url, json=body)
            response = await self._http.send(request, stream=True)
        except (httpx.UnsupportedProtocol, httpx.InvalidURL):
            raise UnreachableError(
                f"[backend] base_url {self.base_url!r} is not a valid http(s) URL. "
                "Set it to the server's address, e.g. http://127.0.0.1:8080/v1.",
                retryable=False,
            ) from None
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise UnreachableError(
                f"Could not connect to {self.base_url} ({_describe(exc)}). Check that the "
                "server is running and that [backend] base_url is right."
            ) from None
        except httpx.TimeoutException:
            raise self._timeout_error() from None
        except httpx.TransportError as exc:
            raise self._dropped_error(exc) from None
        if response.status_code < 400:
            return response
        try:
            text = await _read_limited(response)
        except httpx.HTTPError:
            text = ""
        finally:
            await response.aclose()
        raise classify_error(
            response.status_code,
            text,
            response.headers,
            sent_tools=bool(body.get("tools")),
            sent_stream=bool(body.get("stream")),
            sent_images=_has_images(body),
            model=self.model,
            secret=self._api_key,
        )

    async def _read_completion(self, response: httpx.Response) -> ChatResult:
        try:
            raw = await response.aread()
        except httpx.TimeoutException:
            raise self._timeout_error() from None
        except httpx.TransportError as exc:
            raise self._dropped_error(exc) from None
        try:
            data = json.loads(raw)
        except ValueError:
            raise malformed_chunk("a reply that is not JSON", "") from None
        if isinstance(data, dict) and data.get("error"):
            raise self._error_from_json(data, "")
        return parse_completion(data)

    # -- helpers ----------------------------------------------------------------

    def _body(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        max_tokens: int | None,
        temperature: float | None,
        *,
        stream: bool,
        top_p: float | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "stream": stream}
        if stream:
            body["stream_options"] = {"include_usage": True}
            if self.prompt_progress:
                body["return_progress"] = True
        if tools:
            body["tools"] = tools
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if temperature is not None:
            body["temperature"] = temperature
        if top_p is not None:
            body["top_p"] = top_p
        return body

    def _decode(self, event: SSEEvent, acc: StreamAccumulator) -> Any | None:
        """The chunk's JSON; None if the stream was cut inside it. Raises for errors."""
        try:
            chunk = json.loads(event.data)
        except ValueError:
            if event.event == "error":
                chunk = {"error": {"message": event.data}}
            elif not event.complete:
                return None
            else:
                snippet = event.data[:60]
                raise malformed_chunk(f"invalid JSON {snippet!r}", acc.text) from None
        if event.event == "error" or (isinstance(chunk, dict) and chunk.get("error")):
            err = self._error_from_json(chunk, acc.text)
            # After text has reached the caller a retry would repeat it.
            err.retryable = err.retryable and not acc.has_content
            raise err
        return chunk

    def _error_from_json(self, data: Any, partial_text: str) -> BackendError:
        """An error the server reported inside a 200 response (mid-stream or in the body)."""
        inner = data.get("error") if isinstance(data, dict) else None
        code = inner.get("code") if isinstance(inner, dict) else None
        status = code if isinstance(code, int) and 400 <= code < 600 else None
        err = classify_error(
            status,
            json.dumps(data),
            sent_tools=False,
            model=self.model,
            secret=self._api_key,
        )
        err.partial_text = partial_text
        return err

    def _should_retry(self, err: BackendError, attempt: int) -> bool:
        return err.retryable and attempt < self.max_retries

    def _retry_delay(self, err: BackendError, attempt: int) -> float:
        retry_after = err.retry_after if isinstance(err, RateLimitedError) else None
        delay = backoff_delay(attempt, retry_after)
        logger.info(
            "retrying %s in %.2f s (attempt %d of %d): %s",
            self.base_url,
            delay,
            attempt + 1,
            self.max_retries,
            type(err).__name__,
        )
        return delay

    def _timeout_error(self) -> BackendTimeoutError:
        return BackendTimeoutError(
            f"{self.base_url} sent nothing for {self.timeout_s:g} s. The server may be "
            "overloaded or still loading the model; if it is just slow, raise "
            "[backend] timeout_s."
        )

    def _dropped_error(self, exc: Exception | None) -> UnreachableError:
        why = f" ({_describe(exc)})" if exc is not None else ""
        return UnreachableError(
            f"{self.base_url} closed the connection before replying{why}. Check that the "
            "server is healthy; newt retries this automatically."
        )


def _has_images(body: dict[str, Any]) -> bool:
    """Does any message carry an image part?"""
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") == "image_url" for p in content
        ):
            return True
    return False


async def _read_limited(response: httpx.Response) -> str:
    """At most _ERROR_BODY_LIMIT bytes of an error body (a proxy may send megabytes)."""
    data = bytearray()
    async for chunk in response.aiter_bytes():
        data.extend(chunk)
        if len(data) >= _ERROR_BODY_LIMIT:
            break
    return bytes(data[:_ERROR_BODY_LIMIT]).decode("utf-8", "replace")


def _whole_deltas(result: ChatResult) -> list[StreamEvent]:
    """A reply that arrived in one body, as the deltas a stream would have sent."""
    deltas: list[StreamEvent] = [StreamThinking(result.thinking)] if result.thinking else []
    return [*deltas, StreamText(result.text)] if result.text else deltas


def _describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
