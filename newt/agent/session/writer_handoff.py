"""A turn and a detached summary writer of the same conversation.

Print mode leaves a fold's summary to a detached `newt --finish-summary ID`
(newt/cli/detached_writers.py), which keeps its pid in a file beside the
database while it asks the model. The next turn on that conversation finds it
here and stops it (a one-slot server would make the turn wait for the whole
summary) or, when the summary is overdue, waits for it (`BackgroundSummary`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

from newt.pid_claim import holder


def writer_pid_file(db_path: Path, conversation_id: str) -> Path:
    """Where a detached summary writer for this conversation leaves its pid
    while it is asking the model (removed once the summary is written)."""
    return db_path.parent / f"summary-{conversation_id}.pid"


def _writer_pid(db_path: Path, conversation_id: str) -> int | None:
    """The pid of a live `newt --finish-summary` for this conversation, else
    None: the process holding the claim on its pid file (newt/pid_claim.py;
    a stale file names no one)."""
    return holder(writer_pid_file(db_path, conversation_id))


async def wait_for_detached_writer(
    db_path: Path, conversation_id: str, timeout: float, poll_s: float = 0.1
) -> bool:
    """Wait until a detached writer still asking the model for this
    conversation's summary has stored it and exited (see
    `BackgroundSummary.settle`: an overdue summary lands before the next
    request, and waiting costs only what the writer has left, where stopping
    it and asking again would cost the whole summary). False when none was
    running or it outlived `timeout` (it is stopped then)."""
    pid = _writer_pid(db_path, conversation_id)
    if pid is None:
        return False
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while _writer_pid(db_path, conversation_id) == pid:
        if loop.time() >= deadline:
            stop_detached_writer(db_path, conversation_id)
            return False
        await asyncio.sleep(poll_s)
    return True


def stop_detached_writer(db_path: Path, conversation_id: str) -> bool:
    """Stop a detached `newt --finish-summary` still writing this conversation's
    summary (see `BackgroundSummary.preempt`: a turn goes first). The fallback
    record stays; the turn's own print run starts a new writer if one is owed.
    Only the process holding the writer's claim is signalled (a stale pid
    file may name another process)."""
    pid = _writer_pid(db_path, conversation_id)
    if pid is None:
        return False
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGTERM)
        return True
    return False
