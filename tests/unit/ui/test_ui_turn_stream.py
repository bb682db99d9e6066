"""The pump between the session's turn and the chat screen (turn_stream.py):
a burst of events does not hold the event loop, and a cancellation that lands
between events still reaches the session, which keeps the partial reply."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from newt.agent.events import AgentEvent, TextDelta
from newt.ui.screens import turn_stream
from newt.ui.screens.turn_stream import END, pump


class Burst:
    """A session generator whose events are all ready at once (a buffered
    burst from the server): it never waits between them."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.sent = 0
        self.closed_with: str | None = None

    async def events(self) -> AsyncIterator[AgentEvent]:
        try:
            for _ in range(self.n):
                self.sent += 1
                yield TextDelta("word ")
        except (asyncio.CancelledError, GeneratorExit) as exc:
            self.closed_with = type(exc).__name__  # the session keeps the partial reply
            raise


async def test_a_burst_of_events_lets_the_event_loop_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(turn_stream, "PUMP_SLICE", 0.0)
    burst = Burst(2000)
    queue: asyncio.Queue[Any] = asyncio.Queue()
    seen_during: list[int] = []

    async def other_work() -> None:  # e.g. a key on its way to the prompt
        while True:
            seen_during.append(burst.sent)
            await asyncio.sleep(0)

    other = asyncio.create_task(other_work())
    await asyncio.sleep(0)
    await pump(burst.events(), queue)
    other.cancel()
    assert any(0 < sent < burst.n for sent in seen_during)  # ran in the middle of the burst
    assert queue.qsize() == burst.n + 1


async def test_a_cancel_between_events_still_interrupts_the_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(turn_stream, "PUMP_SLICE", 0.0)
    burst = Burst(100_000)
    queue: asyncio.Queue[Any] = asyncio.Queue()
    task = asyncio.create_task(pump(burst.events(), queue))
    for _ in range(5):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert 0 < burst.sent < burst.n
    assert burst.closed_with in ("CancelledError", "GeneratorExit")
    items = [queue.get_nowait() for _ in range(queue.qsize())]
    assert items[-1] is END and len(items) == burst.sent + 1
