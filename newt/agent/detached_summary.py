"""The detached summary writer of print mode (`newt --finish-summary ID`).

`newt -p` gives the shell its prompt back at once; when its turn folded turns
into the record, a detached child writes their summary and stores it (see
`BackgroundSummary`). While it is asking the model it leaves its pid in a
file beside the database, so the next turn on that conversation can stop it
first (a one-slot server would make that turn wait for the whole summary).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from newt.config import Config


def writer_pid_file(db_path: Path, conversation_id: str) -> Path:
    """Where a detached summary writer for this conversation leaves its pid
    while it is asking the model (removed once the summary is written)."""
    return db_path.parent / f"summary-{conversation_id}.pid"


def stop_detached_writer(db_path: Path, conversation_id: str) -> bool:
    """Stop a detached `newt --finish-summary` still writing this conversation's
    summary (see `BackgroundSummary.preempt`: a turn goes first). The fallback
    record stays; the turn's own print run starts a new writer if one is owed.
    Only a process whose command line names --finish-summary and this
    conversation is signalled (a stale pid file may name another process);
    without /proc (not Linux) nothing is stopped."""
    path = writer_pid_file(db_path, conversation_id)
    try:
        pid = int(path.read_text().strip())
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return False
    if b"--finish-summary" not in argv or conversation_id.encode() not in argv:
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
