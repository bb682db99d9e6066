"""Moving a turn's events from the session to the screen.

The session's generator runs in its own task (the pump) and the screen drains
a queue, so cancelling the screen's worker (Esc) always interrupts the session
itself, and deltas that queued up while the screen rendered go out as one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from newt.agent.events import AgentEvent, Compacted, TextDelta, ThinkingDelta, TurnError
from newt.agent.views import ReplyStats

END = object()


@dataclass
class Outcome:
    status: str = "complete"
    reply: str | None = None
    error: TurnError | None = None
    compactions: list[Compacted] = field(default_factory=list)
    thinking: str | None = None
    stats: ReplyStats | None = None


async def pump(events: AsyncIterator[AgentEvent], queue: asyncio.Queue[Any]) -> None:
    """Move the session's events into a queue.

    The pump only ever waits inside the session's generator (the queue is
    unbounded), so cancelling it always interrupts the session itself.
    """
    try:
        async for event in events:
            queue.put_nowait(event)
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
