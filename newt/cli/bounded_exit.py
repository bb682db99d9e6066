"""Leaving a one-shot newt (print mode, the detached summary writer) in bounded time.

Contract: `run_bounded(main)` returns `main`'s result (or raises what it
raised, KeyboardInterrupt on Ctrl-C like `asyncio.run`) at most about
`CLOSE_GRACE_S + REAP_GRACE_S` after `main` itself finished, whatever
background work is still pending: `close_within` stops a session's close
from waiting on work that ignores its cancel, and whatever tasks are left
when `main` returns are cancelled again and again for `REAP_GRACE_S`, then
abandoned (the process exits without them: the store is closed by then and a
summary still owed is the detached writer's job). A thread that would still
hold the exit (not a daemon) after `THREAD_GRACE_S` is left too: the process
ends with `main`'s code (`os._exit`, output flushed first).

Why: `newt -c -p` must never hang a script. The embedding queue lost the
one cancel it was sent when it landed as its retry wait ended (Python
3.11's `asyncio.wait_for` returns the inner result then and drops the
cancel), kept retrying a dead endpoint, and `asyncio.run` waited for it
forever. A cancel sent again a moment later lands. And a detached summary
writer that two turns' SIGTERMs reached hung for 40 minutes at exit, waiting
for its store's connection thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Awaitable, Coroutine
from typing import Any

# A session closes in milliseconds; past this it is waiting on something stuck.
CLOSE_FIRST_WAIT_S = 1.0
CLOSE_GRACE_S = 5.0
REAP_GRACE_S = 3.0
THREAD_GRACE_S = 2.0
RECANCEL_EVERY_S = 0.2


async def close_within(closing: Awaitable[None], grace_s: float = CLOSE_GRACE_S) -> bool:
    """Await `closing` (a session's `close()`); if it is still running after
    CLOSE_FIRST_WAIT_S, cancel it every RECANCEL_EVERY_S (a cancel reaches
    whatever task it waits on, such as a background queue that lost its first
    cancel) until it ends or `grace_s` passed. True if it ended in time.

    A cancel of the caller while waiting is honoured once the close is over
    or abandoned, so Ctrl-C still ends the program."""
    task = asyncio.ensure_future(closing)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    interrupted = False
    wait_s = min(CLOSE_FIRST_WAIT_S, grace_s)
    while not task.done():
        try:
            await asyncio.wait({task}, timeout=wait_s)
        except asyncio.CancelledError:
            interrupted = True  # finish closing first: the store must be closed
        if task.done():
            break
        if loop.time() >= deadline:
            task.cancel()
            break
        task.cancel()
        wait_s = min(RECANCEL_EVERY_S, max(0.0, deadline - loop.time()))
    if task.done() and not task.cancelled():
        task.exception()  # retrieved: a close that failed is not worth a traceback here
    if interrupted:
        raise asyncio.CancelledError
    return task.done()


async def reap_tasks(grace_s: float = REAP_GRACE_S) -> int:
    """Cancel every other task of this loop, again every RECANCEL_EVERY_S,
    until they have ended or `grace_s` passed; the number still running."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    me = asyncio.current_task()
    while True:
        left = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
        if not left or loop.time() >= deadline:
            return len(left)
        for task in left:
            task.cancel()
        await asyncio.wait(left, timeout=min(RECANCEL_EVERY_S, deadline - loop.time()))


def run_bounded(main: Coroutine[Any, Any, int], *, reap_s: float = REAP_GRACE_S) -> int:
    """`asyncio.run(main)` that never waits open-endedly for leftover tasks.

    Tasks still running when `main` ends (returning or raising) get `reap_s`
    of repeated cancels; the loop is then closed as `asyncio.run` closes it,
    unless some would not stop: then it is left as it is (closing it would
    wait for them for ever) and the process ends without them."""
    runner = asyncio.Runner()
    try:
        code = runner.run(main)
        if _stuck_threads(THREAD_GRACE_S):
            # a thread nobody will stop (a store's connection a twice-cancelled close
            # left open) would hold the interpreter's exit for ever
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        return code
    finally:
        survivors = 0
        with contextlib.suppress(BaseException):
            survivors = runner.run(reap_tasks(reap_s))
        if survivors:
            # the loop is dropped with them: silence "Task was destroyed but it is pending"
            logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        else:
            runner.close()


def _stuck_threads(grace_s: float) -> list[threading.Thread]:
    """Threads other than the main one that would keep the process alive (not
    daemons), still running after `grace_s` of waiting for them."""

    def keeping() -> list[threading.Thread]:
        main = threading.main_thread()
        return [t for t in threading.enumerate() if t is not main and not t.daemon]

    deadline = time.monotonic() + grace_s
    for thread in keeping():
        thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in keeping() if t.is_alive()]
