"""Summaries of folded turns, written after the reply is shown.

A turn that compacts folds the oldest turns at once with the owed record
(the user's words from them; stored right after the turn), so the user gets
the prompt back without waiting for the model to write a summary. This task
then asks for the summary without holding the conversation, and applies and
stores it behind the session's gate, between turns. A turn that starts while
one fold is owed makes it give way (`preempt`); once more than one is owed the
turn lets it land first (`settle`), so a steady conversation cannot keep a
summary from ever being written. One task per session: two summaries never
run for one conversation. Cancelled by /new, /resume and close; the owed
record is already durable, and a reopened conversation resumes the summary.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from newt.agent.conversation.log import ConversationLog
from newt.agent.session.turn_gate import TurnGate
from newt.agent.session.writer_handoff import stop_detached_writer, wait_for_detached_writer
from newt.memory import MemoryProvider

log = logging.getLogger(__name__)
MAX_ROUNDS = 3


def _owes(provider: MemoryProvider, *, overdue: bool = True) -> bool:
    """A summary is owed (pending), or more than one fold's (overdue)."""
    owing = provider.summarizing()
    if owing is None:
        return False
    return owing.summary_overdue if overdue else owing.summary_pending


def _steps(provider: MemoryProvider) -> int:
    owing = provider.summarizing()
    return owing.owed_steps if owing is not None else 0


class BackgroundSummary:
    def __init__(
        self,
        gate: TurnGate,
        log: ConversationLog,
        current: Callable[[], MemoryProvider],
        writer: Callable[[], Any],
        reload: Callable[[], Awaitable[None]],
    ) -> None:
        self.gate = gate
        self.reload = reload
        self.writer = writer
        self.log = log
        self.current = current
        self._task: asyncio.Task[None] | None = None
        self._summarizing = False  # asking the model (not yet waiting to apply)
        # (provider, steps owed) when settling last failed: not retried before a new step
        self._gave_up: tuple[int, int] | None = None
        # Called once a summary is written, before it waits for the locks to
        # apply it (the detached writer stops being preemptible then).
        self.on_written: Callable[[], object] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self.running or not _owes(self.current(), overdue=False):
            return
        self._task = asyncio.create_task(self._work())

    async def _work(self) -> None:
        provider = self.current().summarizing()
        if provider is None:
            return
        try:
            # A few rounds at most: each round either stores a summary or finds
            # that another newt moved the record on, and then summarizes what
            # that newt left pending.
            for _ in range(MAX_ROUNDS):
                if not provider.summary_pending:
                    return
                self._summarizing = True
                try:
                    result = await provider.summarize_pending()  # no lock: turns go on
                finally:
                    self._summarizing = False
                if result is None:
                    return  # failed: the fallback stays; the next fold retries
                if self.on_written is not None:
                    self.on_written()
                async with self.gate, self.writer():  # between turns, never under one
                    if provider is not self.current():
                        return  # the model changed: this provider is gone
                    if await self.log.changed_elsewhere():
                        # another newt appended since (a quick `newt -c -p` after
                        # this one): build on the log, then apply the summary if
                        # the turns it was written from are still the ones owed
                        await self.reload()
                    if not provider.apply_summary(result):
                        continue
                    await self.log.persist_compaction(provider, "summary")
        except asyncio.CancelledError:
            raise
        except Exception:
            log.debug("background summary failed; the fallback record stands", exc_info=True)

    async def wait(self, timeout: float | None = None) -> bool:
        """Let a running summary finish (print mode, before exiting)."""
        task = self._task
        if task is None or task.done():
            return True
        done, _ = await asyncio.wait({task}, timeout=timeout)
        return bool(done)

    async def settle(self, timeout: float) -> bool:
        """Before a turn takes the conversation: when more than one fold's
        summary is owed (`summary_overdue`), let it land first. Why: each turn
        preempts a summary still being written, so in a steady conversation on
        a one-slot server none was ever written (11 of 12 records in a 40-turn
        local chat). A running summary (ours, or a detached print-mode
        writer's) is waited for, not asked again; otherwise one is started.
        Costs the turn what is left of one summary, at most every other fold;
        one fold owed still gives way. Waits at most `timeout` (then the turn
        preempts it as usual); never raises. True when nothing is overdue now.
        When it fails (the backend errs, or writes nothing) the next turns are
        not held up for it again until another step is owed."""
        try:
            provider = self.current()
            if not _owes(provider):
                return True
            owed = (id(provider), _steps(provider))
            if owed == self._gave_up:
                return False
            conv = self.log.conversation
            if conv is not None and await wait_for_detached_writer(
                self.log.store.db.path, conv.id, timeout
            ):
                async with self.gate, self.writer():  # it stored the summary: take it
                    if await self.log.changed_elsewhere():
                        await self.reload()
            if _owes(self.current()):
                self.start()
                await self.wait(timeout)
        except Exception:
            log.debug("settling an overdue summary failed; the turn goes on", exc_info=True)
        if _owes(self.current()):
            self._gave_up = (id(self.current()), _steps(self.current()))
            return False
        return True

    async def preempt(self) -> None:
        """A turn is about to run: stop a summary still being written (it is
        started again after the turn). On a one-slot server (llama-server
        -np 1, what `newt --local` runs) its request would hold the slot and
        the user's reply would wait for the whole summary: measured 62 s
        behind a 600-token summary on a busy machine, 0.7 s once cancelled
        (the server frees the slot when the client goes). A summary already
        written and waiting to be applied is kept. A detached print-mode
        writer for the conversation is stopped the same way."""
        if self._summarizing:
            await self.cancel()
        if self.log.conversation is not None:
            stop_detached_writer(self.log.store.db.path, self.log.conversation.id)

    async def cancel(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
