"""Moving a turn's events from the session to the screen.

The session's generator runs in its own task (the pump) and the screen drains
a queue, so cancelling the screen's worker (Esc) always interrupts the session
itself, and deltas that queued up while the screen rendered go out as one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from newt.agent.display import ReplyStats
from newt.agent.events import AgentEvent, Compacted, TextDelta, ThinkingDelta, TurnError

END = object()
PUMP_SLICE = 0.005  # seconds of the session's work after which the event loop gets a turn


@dataclass
class Outcome:
    status: str = "complete"
    reply: str | None = None
    error: TurnError | None = None
    compactions: list[Compacted] = field(default_factory=list)
    thinking: str | None = None
    stats: ReplyStats | None = None


async def pump(events: AsyncGenerator[AgentEvent, None], queue: asyncio.Queue[Any]) -> None:
    """Move the session's events into a queue.

    The pump waits inside the session's generator (the queue is unbounded),
    so cancelling it interrupts the session itself. A burst the server sent
    at once (buffered chunks need no wait) would otherwise be decoded in one
    stretch: every PUMP_SLICE the pump gives the event loop a turn, and a
    cancellation that lands there closes the session's generator, which keeps
    the partial reply just the same.
    """
    try:
        started = time.monotonic()
        async for event in events:
            queue.put_nowait(event)
            if time.monotonic() - started >= PUMP_SLICE:
                try:
                    await asyncio.sleep(0)
                except asyncio.CancelledError:
                    await events.aclose()
                    raise
                started = time.monotonic()
    except Exception as exc:
        queue.put_nowait(exc)
    finally:
        queue.put_nowait(END)


def coalesce(items: list[Any]) -> list[Any]:
    """Merge runs of TextDelta (and of ThinkingDelta) into one (rendering per
    token would lag behind)."""
    out: list[Any] = []
    for item in items:
        if isinstance(item, TextDelta) and out and isinstance(out[-1], TextDelta):
            out[-1] = TextDelta(out[-1].text + item.text)
        elif isinstance(item, ThinkingDelta) and out and isinstance(out[-1], ThinkingDelta):
            out[-1] = ThinkingDelta(out[-1].text + item.text)
        else:
            out.append(item)
    return out
