"""The session's one gate: whatever changes the conversation passes it alone.

A turn, /compact, /new, a resume, a model switch, a note, forgetting and a
background summary's landing each hold it while they work, so no two of them
interleave (a summary never lands in another conversation's log; a /compact
never folds turns under a reply's pre-send guard). ChatSession makes one and
hands it to the parts that change the conversation; it is only a gate, so a
part handed it holds nothing else of the session. Why a class: the parts
name what they wait on, and nothing else of the session can be reached from it.
"""

from __future__ import annotations

import asyncio


class TurnGate:
    def __init__(self) -> None:
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> None:
        await self._lock.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self._lock.release()

    def busy(self) -> bool:
        """Someone is changing the conversation now."""
        return self._lock.locked()
