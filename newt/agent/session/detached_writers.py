"""The detached writers of print mode: `newt --finish-summary ID` and
`newt --catch-up-vectors`.

`newt -p` gives the shell its prompt back at once; when its turn folded turns
into the record, a detached child writes their summary and stores it (see
`BackgroundSummary`). While it is asking the model it leaves its pid in a
file beside the database, so the next turn on that conversation can stop it
first (a one-slot server would make that turn wait for the whole summary),
or, when the summary is overdue (more than one fold owed), wait for it.

Every stored record gets its vector whatever wrote it: print mode embeds its
turn's records before it exits (bounded), and when records are still without
a vector (an import, a first run fetching the model, a long backlog) one
detached `newt --catch-up-vectors` embeds them (one at a time per database,
by its pid file), so recall by meaning works for scripts too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from newt.config import Config

VECTORS_FLAG = "--catch-up-vectors"


def writer_pid_file(db_path: Path, conversation_id: str) -> Path:
    """Where a detached summary writer for this conversation leaves its pid
    while it is asking the model (removed once the summary is written)."""
    return db_path.parent / f"summary-{conversation_id}.pid"


def _writer_pid(db_path: Path, conversation_id: str) -> int | None:
    """The pid of a live `newt --finish-summary` for this conversation, else None.
    Only a process whose command line names --finish-summary and the
    conversation counts (a stale pid file may name another process); without
    /proc (not Linux) none is found."""
    try:
        pid = int(writer_pid_file(db_path, conversation_id).read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _alive(pid, conversation_id) else None


def _alive(pid: int, conversation_id: str) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"--finish-summary" in argv and conversation_id.encode() in argv


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
    while _alive(pid, conversation_id):
        if loop.time() >= deadline:
            stop_detached_writer(db_path, conversation_id)
            return False
        await asyncio.sleep(poll_s)
    return True


def stop_detached_writer(db_path: Path, conversation_id: str) -> bool:
    """Stop a detached `newt --finish-summary` still writing this conversation's
    summary (see `BackgroundSummary.preempt`: a turn goes first). The fallback
    record stays; the turn's own print run starts a new writer if one is owed.
    Only a process whose command line names --finish-summary and this
    conversation is signalled (a stale pid file may name another process);
    without /proc (not Linux) nothing is stopped."""
    pid = _writer_pid(db_path, conversation_id)
    if pid is None:
        return False
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGTERM)
        return True
    return False


def spawn_summary_writer(config: Config, conversation_id: str) -> None:
    """Start a detached `newt --finish-summary` for this conversation: print mode
    gives the shell its prompt back while the summary is written. The child
    inherits the environment (NEWT_HOME, the API key's variable) and stores the
    summary under the conversation's writer lock; if another newt wrote to the
    conversation meanwhile it reloads from the log and applies the summary when
    the folded turns it covers are still the ones owed."""
    _spawn(config, "--finish-summary", conversation_id)


def _spawn(config: Config, *flags: str) -> None:
    """`newt FLAGS` detached, with this run's backend and config file."""
    argv = [sys.executable, "-m", "newt", *flags]
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


def vector_pid_file(db_path: Path) -> Path:
    """Where a detached vector writer for this database leaves its pid."""
    return db_path.parent / "vectors.pid"


def vector_writer_alive(pid_file: Path) -> bool:
    try:
        pid = int(pid_file.read_text().strip())
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return False
    return VECTORS_FLAG.encode() in argv


def spawn_vector_writer(config: Config) -> None:
    """Start a detached `newt --catch-up-vectors` unless one is at work on
    this database: it embeds the records still without a vector, then exits."""
    if config.db_path is None or vector_writer_alive(vector_pid_file(config.db_path)):
        return
    _spawn(config, VECTORS_FLAG)
