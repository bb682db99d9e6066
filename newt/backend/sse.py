"""Server-sent events: group ``data:`` lines into events.

Follows the SSE spec (blank line ends an event, ``:`` starts a comment, several
``data:`` lines join with newlines, unknown fields are ignored), plus one
llama-server habit: it reports some stream failures as an ``error: {...}`` line
of its own, which we surface as an event named "error".
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass


@dataclass(frozen=True)
class SSEEvent:
    event: str
    data: str
    # False for data left over when the stream ended without the closing blank
    # line: either a sloppy server or a connection cut mid-event.
    complete: bool = True


async def iter_sse(lines: AsyncIterable[str]) -> AsyncIterator[SSEEvent]:
    """Events from an iterable of lines (line endings already stripped)."""
    data: list[str] = []
    event = "message"
    async for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield SSEEvent(event, "\n".join(data))
            data, event = [], "message"
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "error":
            yield SSEEvent("error", value)
    if data:
        yield SSEEvent(event, "\n".join(data), complete=False)
