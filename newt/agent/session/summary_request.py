"""The summarizer's request as sent: started as the conversation's chat requests are.

A server keeps the prefix of the last request it read. On a one-slot server a
summary request asked between two turns evicts the conversation; one that
starts as the chat requests do (their system message, their tools) leaves
that start to the next chat request, which a fold has changed only after it.
So the summarizer's instructions open its user message, under the chat's
system message, with the chat's tools offered and `tool_choice` "none".
Without a chat request to follow (a writer started afresh, a new model) the
summarizer's messages go as they are.
"""

from __future__ import annotations

import json
from typing import IO, Any

from newt.backend.types import RequestHead
from newt.memory import MemMessage

HEAD_BYTES_MAX = 48_000  # what a pipe takes at once: a larger head is not handed on


def summary_messages(messages: list[MemMessage], head: RequestHead | None) -> list[dict[str, Any]]:
    """`messages` (the summarizer's system instructions, then its input) as
    sent after a chat request that started with `head`."""
    plain = [{"role": m.role, "content": m.content} for m in messages]
    if head is None or len(messages) < 2 or messages[0].role != "system":
        return plain
    first = {"role": "user", "content": f"{messages[0].content}\n\n{messages[1].content}"}
    return [{"role": "system", "content": head.system}, first, *plain[2:]]


def head_bytes(head: RequestHead | None) -> bytes:
    """`head` for a detached summary writer's stdin (empty: none, or too large)."""
    if head is None:
        return b""
    data = json.dumps({"system": head.system, "tools": head.tools}).encode()
    return data if len(data) <= HEAD_BYTES_MAX else b""


def read_head(stream: IO[bytes]) -> RequestHead | None:
    """The head a print run handed its detached summary writer, if any."""
    try:
        raw = json.loads(stream.read() or b"null")
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("system"), str):
        return None
    tools = raw.get("tools")
    return RequestHead(raw["system"], tools if isinstance(tools, list) and tools else None)
