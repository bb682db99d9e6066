"""Build a ChatResult from chat.completion.chunk events or one chat.completion body.

Pure (no I/O) so the parsing rules are tested without a server:

- text: every ``choices[0].delta.content`` in order, less a leading
  ``<think>…</think>`` block, which goes to thinking (newt.backend.thinking);
- thinking: ``delta.reasoning_content`` (or ``reasoning``) and that block;
- tool calls: accumulated by ``index``; id and name come from the first delta
  that carries them, argument fragments are concatenated and parsed as JSON
  only at the end (see ``parse_tool_arguments`` for bad JSON);
- finish_reason: the last non-null one;
- usage: from whichever chunk carries it (normally the last, with
  ``choices: []``), including ``prompt_tokens_details.cached_tokens`` or
  llama-server's ``timings.cache_n`` (prompt tokens read from its cache).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from newt.backend.errors import MalformedStreamError
from newt.backend.thinking import REASONING_FIELDS, ThinkTagSplitter
from newt.backend.types import (
    ChatResult,
    ChatUsage,
    PromptProgress,
    StreamText,
    StreamThinking,
    ToolCall,
)

Delta = StreamText | StreamThinking


def parse_tool_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """(arguments, error). Empty means no arguments; anything but a JSON object is an error."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return {}, f"arguments are not valid JSON ({exc})"
    if not isinstance(value, dict):
        return {}, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


def parse_usage(data: Any, timings: Any = None) -> ChatUsage | None:
    """The usage object; its cached prompt tokens from OpenAI's
    `prompt_tokens_details.cached_tokens`, else llama-server's `timings.cache_n`
    (which it sends beside the usage)."""
    if not isinstance(data, dict):
        return None
    prompt = data.get("prompt_tokens")
    completion = data.get("completion_tokens")
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    cached = None
    details = data.get("prompt_tokens_details")
    if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
        cached = details["cached_tokens"]
    elif isinstance(timings, dict) and isinstance(timings.get("cache_n"), int):
        cached = timings["cache_n"]
    return ChatUsage(prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached)


@dataclass
class _PendingToolCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class StreamAccumulator:
    """Feed it decoded chunks; ask it for the result when the stream ends."""

    text_parts: list[str] = field(default_factory=list)
    thinking_parts: list[str] = field(default_factory=list)
    tags: ThinkTagSplitter = field(default_factory=ThinkTagSplitter)
    tool_calls: dict[int, _PendingToolCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: ChatUsage | None = None
    done: bool = False  # saw data: [DONE]

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    @property
    def thinking(self) -> str:
        return "".join(self.thinking_parts)

    @property
    def has_content(self) -> bool:
        return bool(self.text_parts or self.thinking_parts or self.tool_calls)

    @property
    def complete(self) -> bool:
        """The server finished on purpose: [DONE] or the usage chunk arrived."""
        return self.done or self.usage is not None

    def feed(self, chunk: Any) -> str:
        """Take one chunk; return the answer text it added ('' if none)."""
        return "".join(d.text for d in self.feed_deltas(chunk) if isinstance(d, StreamText))

    def feed_deltas(self, chunk: Any) -> list[Delta]:
        """Take one chunk; return the thinking and answer pieces it added, in order."""
        if not isinstance(chunk, dict):
            raise self._malformed(f"expected a JSON object, got {type(chunk).__name__}")
        usage = parse_usage(chunk.get("usage"), chunk.get("timings"))
        if usage is not None:
            self.usage = usage
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise self._malformed("'choices' is not a list")
        added: list[Delta] = []
        for choice in choices:
            # newt always asks for one choice; ignore any others a server invents.
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise self._malformed("'delta' is not an object")
            for name in REASONING_FIELDS:
                reasoning = delta.get(name)
                if isinstance(reasoning, str) and reasoning:
                    added.append(StreamThinking(reasoning))
                    break
            content = delta.get("content")
            if isinstance(content, str) and content:
                added.extend(self._split(*self.tags.feed(content)))
            for part in delta.get("tool_calls") or []:
                self._feed_tool_call(part)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        self._keep(added)
        return added

    def flush(self) -> list[Delta]:
        """The stream ended: what the tag splitter still held back."""
        rest = self._split(*self.tags.flush())
        self._keep(rest)
        return rest

    @staticmethod
    def _split(thinking: str, text: str) -> list[Delta]:
        pieces: list[Delta] = [StreamThinking(thinking)] if thinking else []
        return [*pieces, StreamText(text)] if text else pieces

    def _keep(self, deltas: list[Delta]) -> None:
        for d in deltas:
            (self.text_parts if isinstance(d, StreamText) else self.thinking_parts).append(d.text)

    def _feed_tool_call(self, part: Any) -> None:
        if not isinstance(part, dict):
            raise self._malformed("a tool call delta is not an object")
        index = part.get("index")
        if not isinstance(index, int):
            # Some servers omit index when each call arrives whole: a new id is a new call.
            ids = [p.id for p in self.tool_calls.values()]
            new_call = part.get("id") and part.get("id") not in ids
            index = len(self.tool_calls) if new_call or not ids else len(self.tool_calls) - 1
        pending = self.tool_calls.setdefault(index, _PendingToolCall())
        if part.get("id") and not pending.id:
            pending.id = str(part["id"])
        function = part.get("function") or {}
        if not isinstance(function, dict):
            raise self._malformed("a tool call's 'function' is not an object")
        if function.get("name") and not pending.name:
            pending.name = str(function["name"])
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            pending.arguments.append(arguments)
        elif isinstance(arguments, dict):  # a few servers send the object itself
            pending.arguments.append(json.dumps(arguments))

    def result(self, *, interrupted: bool = False, reason: str | None = None) -> ChatResult:
        self.flush()  # a no-op when the caller already flushed (and yielded) the rest
        calls = []
        for index in sorted(self.tool_calls):
            pending = self.tool_calls[index]
            raw = "".join(pending.arguments)
            arguments, error = parse_tool_arguments(raw)
            calls.append(
                ToolCall(
                    id=pending.id or f"call_{index}",
                    name=pending.name,
                    arguments=arguments,
                    raw_arguments=raw,
                    arguments_error=error,
                )
            )
        return ChatResult(
            text=self.text,
            tool_calls=calls,
            finish_reason=self.finish_reason,
            usage=self.usage,
            interrupted=interrupted,
            interrupt_reason=reason,
            thinking=self.thinking,
        )

    def _malformed(self, what: str) -> MalformedStreamError:
        return malformed_chunk(what, self.text)


def malformed_chunk(what: str, partial_text: str) -> MalformedStreamError:
    return MalformedStreamError(
        f"The server sent a stream chunk newt cannot read ({what}). The reply so far is "
        "kept. This is a server bug or an incompatible server; try again, or check that "
        "[backend] base_url points at an OpenAI-compatible /v1 endpoint.",
        partial_text=partial_text,
    )


def parse_completion(data: Any) -> ChatResult:
    """A ChatResult from a non-streamed chat.completion body."""
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        raise malformed_chunk("a completion without 'choices'", "")
    acc = StreamAccumulator()
    for choice in data["choices"]:
        if not isinstance(choice, dict) or choice.get("index", 0) != 0:
            continue
        message = choice.get("message") or {}
        if not isinstance(message, dict):
            raise malformed_chunk("'message' is not an object", "")
        # A whole message is a single delta whose tool calls are already complete.
        calls = [
            {"index": i, **call} if isinstance(call, dict) else call
            for i, call in enumerate(message.get("tool_calls") or [])
        ]
        delta = {"content": message.get("content"), "tool_calls": calls}
        for name in REASONING_FIELDS:
            if isinstance(message.get(name), str):
                delta[name] = message[name]
        finish = choice.get("finish_reason")
        acc.feed({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    acc.usage = parse_usage(data.get("usage"), data.get("timings"))
    acc.done = True
    return acc.result()


def parse_prompt_progress(chunk: Any) -> PromptProgress | None:
    """llama-server's ``prompt_progress`` in a chunk, if it carries a well-formed one."""
    found = chunk.get("prompt_progress") if isinstance(chunk, dict) else None
    if not isinstance(found, dict):
        return None
    try:
        return PromptProgress(
            int(found["total"]), int(found.get("cache") or 0), int(found["processed"]),
            float(found.get("time_ms") or 0.0),
        )  # fmt: skip
    except (KeyError, TypeError, ValueError):
        return None
