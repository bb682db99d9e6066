"""Summaries of folded turns, written after the reply is shown.

A turn that compacts folds the oldest turns at once with the fallback record
(stored right after the turn), so the user gets the prompt back without
waiting for the model to write a summary. This task then asks for the summary
without holding the conversation, and applies and stores it under the
session's lock, between turns. One task per session: two summaries never run
for one conversation. Cancelled by /new, /resume and close; the fallback
record is already durable, and a reopened conversation resumes the summary.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import subprocess
import sys
from collections.abc import Awaitable, Callable
from typing import Any, cast

from newt.agent.conversation_log import ConversationLog
from newt.config import Config
from newt.memory import MemoryProvider

log = logging.getLogger(__name__)
MAX_ROUNDS = 3


class BackgroundSummary:
    def __init__(
        self,
        lock: asyncio.Lock,
        log: ConversationLog,
        current: Callable[[], MemoryProvider],
        writer: Callable[[], Any],
        reload: Callable[[], Awaitable[None]],
    ) -> None:
        self.lock = lock
        self.reload = reload
        self.writer = writer
        self.log = log
        self.current = current
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self.running or not getattr(self.current(), "summary_pending", False):
            return
        self._task = asyncio.create_task(self._work())

    async def _work(self) -> None:
        provider: Any = self.current()
        try:
            # A few rounds at most: each round either stores a summary or finds
            # that another newt moved the record on, and then summarizes what
            # that newt left pending.
            for _ in range(MAX_ROUNDS):
                if not provider.summary_pending:
                    return
                result = await provider.summarize_pending()  # no lock: turns go on meanwhile
                if result is None:
                    return  # failed: the fallback stays; the next fold retries
                async with self.lock, self.writer():  # between turns, never under one
                    if provider is not self.current():
                        return  # the model changed: this provider is gone
                    if await self.log.changed_elsewhere():
                        # another newt appended since (a quick `newt -c -p` after
                        # this one): build on the log, then apply the summary if
                        # the turns it was written from are still the ones owed
                        await self.reload()
                    if not cast(Any, provider).apply_summary(result):
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

    async def cancel(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


def spawn_summary_writer(config: Config, conversation_id: str) -> None:
    """Start a detached `newt --finish-summary` for this conversation: print mode
    gives the shell its prompt back while the summary is written. The child
    inherits the environment (NEWT_HOME, the API key's variable) and stores the
    summary under the conversation's writer lock; if another newt wrote to the
    conversation meanwhile it reloads from the log and applies the summary when
    the folded turns it covers are still the ones owed."""
    argv = [sys.executable, "-m", "newt", "--finish-summary", conversation_id]
    argv += ["--base-url", config.backend.base_url, "--model", config.backend.model]
    if config.path is not None and config.path.exists():
        argv += ["--config", str(config.path)]
    with contextlib.suppress(OSError):
        subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not killed with the shell's job
        )
