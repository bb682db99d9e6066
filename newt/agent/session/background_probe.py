"""What `ChatSession.open(background_probe=True)` leaves for later (ChatSession owns one).

The TUI paints its prompt before the backend has been probed: the session opens
with the budget from the capability cache, and the probe (and the embedding
queue's catch-up) start with `start_background_work()`, which the TUI calls once
its prompt is painted, or with the first turn, which waits for the probe
(`probed`). A probe that finds a new budget has the session rebuild its provider,
and the conversation held by then is restored into it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from newt.agent.session.conversations import Conversations
from newt.agent.session.model_link import ModelLink
from newt.agent.session.turn_gate import TurnGate

log = logging.getLogger(__name__)


class BackgroundProbe:
    def __init__(
        self,
        gate: TurnGate,
        link: ModelLink,
        conversations: Conversations,
    ) -> None:
        self.gate = gate
        self.link = link
        self.conversations = conversations
        self._task: asyncio.Task[None] | None = None
        self._pending = False, False  # (probe, embedding catch-up) not started

    def defer(self, *, probe: bool) -> None:
        """Leave the embedding catch-up (and the probe, if asked) for `start`."""
        self._pending = probe, True

    def start(self) -> None:
        """Start what `defer` left for later. Idempotent."""
        probe, embeddings = self._pending
        self._pending = False, False
        if probe:
            self._task = asyncio.create_task(self._probe())
        if embeddings:
            self.link.recall_parts.start()

    async def probed(self) -> None:
        """Wait for a background probe still in flight."""
        self.start()
        if self._task is not None:
            await asyncio.shield(self._task)

    async def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task

    async def _probe(self) -> None:
        """The probe, after open: a new budget replaces the provider (the
        conversation, if one is loaded by now, is restored into it)."""
        try:
            await self.link.capabilities.probe()
            async with self.gate:
                budget = self.link.budget
                await self.link.capabilities.refresh(probe=False)
                if self.link.budget == budget:
                    return  # the cache already knew: the provider stays
                await self.link.refresh(probe=False)
                conv = self.conversations.conversation
                if conv is not None:
                    await self.conversations.load(conv)
        except Exception:  # a probe is advice: the cached or default budget stands
            log.warning("capability probe failed", exc_info=True)
