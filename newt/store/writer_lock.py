"""One writer per conversation, across processes: `async with conversation_writer(...)`.

SQLite serialises single transactions, but a turn is several (the pending
user message, the reply, a compaction) around a slow model call. Two newts
continuing one conversation at once would each build on a history the other is
changing. This lock makes the second wait until the first has finished.

It is a claim (`newt/pid_claim.py`: an `flock` on a pid file) on a small
file in a directory beside the database (`newt.db.locks/<conversation id>.lock`):
- crash-safe: the kernel drops the lock when its holder dies, however it dies;
- never blocks the event loop: it polls with LOCK_NB and `asyncio.sleep`, so
  waiting can be cancelled (Ctrl-C, Esc) like any other await;
- tidy: the holder deletes the file when it lets go. A waiter that then gets
  the lock on the deleted file notices (its inode is no longer at the path)
  and tries again, so two holders can never coexist;
- not re-entrant: taking it twice in one process waits for itself. Take it once,
  around the whole change.
Where `fcntl` does not exist (Windows) and for `:memory:` databases it does
nothing: one process per database is then the user's business.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from newt.files import ensure_private_dir
from newt.pid_claim import PidClaim, holder
from newt.store.errors import StoreError

try:
    import fcntl as _fcntl
except ImportError:  # Windows: no flock; see the module docstring
    _fcntl = None  # type: ignore[assignment]

POLL_S = 0.05
"""How often a waiter tries again; a turn takes seconds, so this costs nothing."""

WaitCallback = Callable[[int | None], object]
"""Called once when the lock is taken by someone else, with the holder's pid if known.
May return an awaitable (it is awaited)."""


class ConversationBusyError(StoreError):
    def __init__(self, conversation_id: str, waited_s: float, holder: int | None) -> None:
        who = f"another newt (pid {holder})" if holder else "another newt"
        super().__init__(
            f"{who} has been writing to conversation {conversation_id[:8]} for "
            f"{waited_s:.0f} s; newt stopped waiting. Try again when it has finished."
        )
        self.conversation_id = conversation_id
        self.holder = holder


def lock_path(db_path: Path | str, conversation_id: str) -> Path:
    """The lock file for one conversation of the database at `db_path`."""
    db_path = Path(db_path)
    # ids are uuid hex; anything else is made file-name safe rather than trusted
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", conversation_id) or "_"
    return db_path.parent / f"{db_path.name}.locks" / f"{safe}.lock"


@asynccontextmanager
async def conversation_writer(
    db_path: Path | str,
    conversation_id: str,
    *,
    on_wait: WaitCallback | None = None,
    timeout_s: float | None = None,
) -> AsyncIterator[None]:
    """Hold the one writer slot of `conversation_id` for the body of the `async with`.

    Waits (without blocking the loop) while another process or task holds it;
    `on_wait` is called once if it has to. With `timeout_s`, gives up with
    ConversationBusyError after that long.
    """
    if _fcntl is None or str(db_path) == ":memory:":
        yield
        return
    path = lock_path(db_path, conversation_id)
    ensure_private_dir(path.parent)
    loop = asyncio.get_running_loop()
    started = loop.time()
    told = False
    while (claim := PidClaim.take(path, wait_s=0)) is None:
        if not told:
            told = True
            if on_wait is not None:
                result = on_wait(holder(path))
                if inspect.isawaitable(result):
                    await result
        if timeout_s is not None and loop.time() - started >= timeout_s:
            raise ConversationBusyError(conversation_id, loop.time() - started, holder(path))
        await asyncio.sleep(POLL_S)
    try:
        yield
    finally:
        # deleted while still held, then let go: a waiter on the old file
        # sees it was deleted and retries on a fresh one
        claim.release()
