"""CPU-bound work off the event loop, on daemon threads.

asyncio.to_thread's default executor is joined when asyncio.run ends, which
would hold a print-mode exit for a download or a batch of embeddings; a daemon
thread never holds up the process's exit. numpy releases the GIL inside its
loops and BLAS calls, so such a thread runs beside the event loop (and beside
aiosqlite's thread running SQL).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def off_loop(fn: Callable[..., T], *args: object) -> T:
    """fn(*args) on a daemon thread, awaited without blocking the event loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        try:
            result, error = fn(*args), None
        except BaseException as exc:  # handed to the awaiting task
            result, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=run, name="newt-numpy", daemon=True).start()
    return await future
