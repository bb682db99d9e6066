"""The detached writers of print mode: `newt --finish-summary ID` and
`newt --catch-up-vectors`.

`newt -p` gives the shell its prompt back at once; when its turn folded turns
into the record, a detached child writes their summary and stores it (see
`BackgroundSummary`). While it is asking the model it leaves its pid in a
file beside the database, so the next turn on that conversation can stop it
first or, when the summary is overdue, wait for it
(newt/agent/session/writer_handoff.py).

Every stored record gets its vector whatever wrote it: print mode embeds its
turn's records before it exits (bounded), and when records are still without
a vector (an import, a first run fetching the model, a long backlog) one
detached `newt --catch-up-vectors` (newt/cli/catch_up.py) embeds them, one at
a time per database by its pid file, so recall by meaning works for scripts too.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
from pathlib import Path

from newt.agent.session.chat_session import ChatSession
from newt.agent.session.summary_request import head_bytes
from newt.agent.session.writer_handoff import stop_detached_writer, writer_pid_file
from newt.backend.types import RequestHead
from newt.cli.bounded_exit import close_within
from newt.config import Config
from newt.pid_claim import PidClaim, holder

VECTORS_FLAG = "--catch-up-vectors"
HEAD_FLAG = "--head-on-stdin"  # the summary writer reads the chat's head from stdin


def spawn_summary_writer(
    config: Config, conversation_id: str, head: RequestHead | None = None
) -> None:
    """Start a detached `newt --finish-summary` for this conversation: print mode
    gives the shell its prompt back while the summary is written. The child
    inherits the environment (NEWT_HOME, the API key's variable) and stores the
    summary under the conversation's writer lock; if another newt wrote to the
    conversation meanwhile it reloads from the log and applies the summary when
    the folded turns it covers are still the ones owed. `head`, the start of
    this run's chat request, goes on its stdin (never its command line, which
    any user may read), so its summary request starts the same way."""
    data = head_bytes(head)
    flags = ["--finish-summary", conversation_id, *([HEAD_FLAG] if data else [])]
    _spawn(config, *flags, stdin=data)


def _spawn(config: Config, *flags: str, stdin: bytes = b"") -> None:
    """`newt FLAGS` detached, with this run's backend and config file."""
    argv = [sys.executable, "-m", "newt", *flags]
    argv += ["--base-url", config.backend.base_url, "--model", config.backend.model]
    if config.path is not None and config.path.exists():
        argv += ["--config", str(config.path)]
    with contextlib.suppress(OSError):
        child = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not killed with the shell's job
        )
        if child.stdin is not None:
            with child.stdin:  # within a pipe's size (HEAD_BYTES_MAX): never blocks
                child.stdin.write(stdin)


class DetachedWriters:
    """The Handoff print mode gives its session (newt.agent.session.exit_work):
    what the session leaves is finished by a detached newt."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def summary(self, conversation_id: str, head: RequestHead | None) -> None:
        spawn_summary_writer(self.config, conversation_id, head)

    def vectors(self) -> None:
        spawn_vector_writer(self.config)


def vector_pid_file(db_path: Path) -> Path:
    """Where a detached vector writer for this database leaves its pid."""
    return db_path.parent / "vectors.pid"


def vector_writer_alive(pid_file: Path) -> bool:
    return holder(pid_file) is not None


def spawn_vector_writer(config: Config) -> None:
    """Start a detached `newt --catch-up-vectors` unless one is at work on
    this database: it embeds the records still without a vector, then exits."""
    if config.db_path is None or vector_writer_alive(vector_pid_file(config.db_path)):
        return
    _spawn(config, VECTORS_FLAG)


async def finish_summary(
    config: Config, conversation_id: str, head: RequestHead | None = None
) -> int:
    """`newt --finish-summary ID` (started detached by print mode): write the
    summary the conversation's last record still owes, then exit. `head`:
    how the print run's chat request started (its stdin)."""
    session = await ChatSession.open(config, probe=False)
    session.client.chat_head = head
    pid_file = writer_pid_file(session.store.db.path, conversation_id)
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    if task is not None:  # a turn on this conversation stops us: see stop_detached_writer
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
    claim = PidClaim.take(pid_file)
    if claim is None:  # an earlier writer still at it: this one goes first
        stop_detached_writer(session.store.db.path, conversation_id)
        claim = PidClaim.take(pid_file, wait_s=5.0)
    if claim is None:
        await close_within(session.close())
        return 0
    try:
        session.summaries.on_written = claim.release
        await session.conversations.resume(conversation_id)
        session.summaries.start()
        await session.summaries.wait(config.backend.timeout_s * 2)
        await session.recall_parts.catch_up(config.backend.timeout_s)
    except asyncio.CancelledError:
        pass  # preempted by a turn: the fallback record stands
    finally:
        claim.release()
        await close_within(session.close())
    return 0
