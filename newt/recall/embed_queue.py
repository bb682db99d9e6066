"""Embed stored records in the background, never in a reply's way.

The session owns one queue:

    queue = EmbedQueue(store.db, embedder)
    queue.start()          # on open: catches up on records stored earlier
    queue.notify()         # after a record is stored (cheap, never blocks)
    await queue.aclose()   # on close: stops at once; nothing is lost

There is no in-memory backlog to lose: the work list is "records of this
embedding space with no vector" (VectorIndex.pending), read from the
database, so a restart resumes where the last run stopped and a record
stored by another process is embedded too. Newest records go first (they are
the likeliest to be asked about). The worker stops for good when the backend
says it serves no embeddings; after a transient failure it waits (doubling
up to RETRY_MAX_S) and tries again, or sooner when notified.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from newt.backend.embeddings import EmbeddingsError, EmbeddingsRejected
from newt.recall.embedder import Embedder, retired_spaces
from newt.recall.pieces import record_pieces
from newt.recall.vectors import VectorIndex
from newt.store.db import Database

logger = logging.getLogger(__name__)

BATCH_RECORDS = 8
# Characters per embeddings request. A server works through the inputs it was
# sent before a recall query that arrives after them, so a small request keeps
# a query's wait short at the same pace (docs/design.md section 7).
REQUEST_CHARS = 600
RETRY_MIN_S = 2.0
RETRY_MAX_S = 120.0


class EmbedQueue:
    def __init__(self, db: Database, embedder: Embedder, *, batch: int = BATCH_RECORDS) -> None:
        self.db = db
        self.embedder = embedder
        self.index = VectorIndex(db, embedder.space)
        self.batch = max(1, batch)
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.embedded = 0  # records embedded by this queue (for tests and status)
        self.failing = False  # the last attempt failed; retrying after a pause
        self._retired = False  # the vectors of the space's older pieces are deleted

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="newt-embed-queue")
            self._wake.set()

    def notify(self) -> None:
        """A record was stored: embed it when the worker gets to it."""
        self._idle.clear()
        self._wake.set()

    async def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until nothing is left to embed (or the worker stopped); False on timeout."""
        if not self.running:
            return True
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._idle.set()

    async def _run(self) -> None:
        delay = RETRY_MIN_S
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                while await self._step():
                    pass
            except EmbeddingsError as exc:
                self.failing = True
                logger.info("embedding failed, retrying in %.0f s: %s", delay, exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), delay)
                delay = min(delay * 2, RETRY_MAX_S)
                self._wake.set()
                continue
            except Exception:  # a bug or a locked database must not kill the app
                logger.debug(
                    "the embedding queue stopped", exc_info=True
                )  # never a traceback on screen
                self._idle.set()
                return
            delay = RETRY_MIN_S
            self.failing = False
            if self.embedder.available is False:
                self._idle.set()
                return  # no embeddings here: nothing will ever change that in this run
            if not self._wake.is_set():
                self._idle.set()

    async def _step(self) -> bool:
        """Embed one batch; False when nothing is pending or embeddings are unavailable."""
        pending = await self.index.pending(self.batch)
        if not pending:
            if not self._retired:  # all embedded again: the old pieces' vectors go
                self._retired = True
                for space in retired_spaces(self.embedder.space):
                    await self.index.drop_space(space)
            return False
        pieces = [record_pieces(content, role) for _, content, role in pending]
        vectors = await self._embed_all([piece for group in pieces for piece in group])
        if vectors is None:
            return False
        at = 0
        for (record_id, content, _), group in zip(pending, pieces, strict=True):
            mine = vectors[at : at + len(group)]
            at += len(group)
            # No vector at all stores the unembeddable mark: never offered again.
            # Only for the text embedded: a record rewritten meanwhile (a
            # corrected note, a forgotten quote) is embedded again.
            await self.index.store(record_id, [v for v in mine if v is not None], content)
            self.embedded += 1
        return True

    async def _embed_all(self, texts: list[str]) -> list[list[float] | None] | None:
        """A vector per text (None for one the server refuses), in requests of
        at most REQUEST_CHARS; None when the backend serves no embeddings.

        A request the server refuses, or that times out, is retried text by
        text, so one bad or slow piece cannot block the queue; a single text
        that times out raises (the server is struggling: back off).
        """
        out: list[list[float] | None] = []
        for request in _requests(texts):
            try:
                got: list[list[float] | None] | None = list(await self._embed(request))
            except _Unavailable:
                return None
            except EmbeddingsRejected:
                got = await self._one_by_one(request)
            except EmbeddingsError:
                if len(request) == 1:
                    raise
                got = await self._one_by_one(request)
            if got is None or self.embedder.available is False:
                return None
            out.extend(got)
        return out

    async def _embed(self, texts: list[str]) -> list[list[float]]:
        vectors = await self.embedder.embed(texts)
        if vectors is None:
            raise _Unavailable
        return vectors

    async def _one_by_one(self, texts: list[str]) -> list[list[float] | None] | None:
        out: list[list[float] | None] = []
        for text in texts:
            try:
                vectors = await self.embedder.embed([text])
            except EmbeddingsRejected:
                out.append(None)
                continue
            if vectors is None:
                return None
            out.extend(vectors)
        return out


class _Unavailable(Exception):
    """The backend said it serves no embeddings (Embedder.available is False)."""


def _requests(texts: list[str]) -> list[list[str]]:
    """`texts` in consecutive groups of at most REQUEST_CHARS (one text at least)."""
    groups: list[list[str]] = []
    size = 0
    for text in texts:
        if groups and size + len(text) <= REQUEST_CHARS:
            groups[-1].append(text)
            size += len(text)
        else:
            groups.append([text])
            size = len(text)
    return groups
