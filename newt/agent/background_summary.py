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
from collections.abc import Callable
from typing import Any, cast

from newt.agent.conversation_log import ConversationLog
from newt.config import Config
from newt.memory import MemoryProvider

log = logging.getLogger(__name__)


class BackgroundSummary:
    def __init__(
        self,
        lock: asyncio.Lock,
        log: ConversationLog,
        current: Callable[[], MemoryProvider],
        writer: Callable[[], Any],
    ) -> None:
        self.lock = lock
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
            while provider.summary_pending:
                result = await provider.summarize_pending()  # no lock: turns go on meanwhile
                if result is None:
                    return  # failed: the fallback stays; the next fold retries
                async with self.lock, self.writer():  # between turns, never under one
                    if provider is not self.current():
                        return  # the model changed: this provider is gone
                    if await self.log.changed_elsewhere():
                        # another newt appended since: our working set is stale, so
                        # the record it would store could not be restored; that newt
                        # resumes the summary from the log itself
                        return
                    if not cast(Any, provider).apply_summary(result):
                        return
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
    summary under the conversation's writer lock, or drops it if another newt
    wrote to the conversation first (that newt resumes it from the log)."""
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
