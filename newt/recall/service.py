"""The session's recall: the engine, and (unless `[recall] embeddings = "off"`)
the embedder and the background queue that embeds records as they are stored.

By default ("auto") the embedder is all-MiniLM-L6-v2 in this process
(recall.embedder.LocalEmbedder): recall by meaning needs no server, and until
its weights are in newt's cache (fetched in the background on first use)
recall is by words. `[recall] embeddings_url` or `embeddings = "server"` asks
an OpenAI-compatible /v1/embeddings endpoint instead.
"""

from __future__ import annotations

import asyncio
import contextlib

from newt.config import Config
from newt.recall.embed_queue import EmbedQueue
from newt.recall.embedder import make_embedder
from newt.recall.engine import RecallEngine
from newt.store import Store

# How often catch_up looks whether the queue failed while it waits.
CATCH_UP_POLL_S = 0.1


class RecallParts:
    def __init__(self, store: Store, config: Config, base_url: str, model: str) -> None:
        rc = config.recall
        self.embedder = make_embedder(
            base_url,
            model,
            config.api_key,
            mode=rc.embeddings,
            embedding_model=rc.embedding_model,
            embeddings_url=rc.embeddings_url,
            space=config.embedding_space,
        )
        self.engine = RecallEngine(store, excerpt_tokens=rc.excerpt_tokens, embedder=self.embedder)
        self.queue = EmbedQueue(store.db, self.embedder) if self.embedder else None

    def start(self) -> None:
        """Catch up on records stored before (newest first), in the background."""
        if self.queue is not None:
            self.queue.start()

    async def catch_up(self, timeout: float) -> bool:
        """Embed every record still without a vector, waiting at most
        `timeout` seconds, and stopping at the first failure (an embeddings
        server down: retrying belongs to a session that stays). False only
        when records are left and the work was going well (more time would
        finish it). Print mode calls it before exit so its turn's records
        are searchable by meaning at once."""
        queue = self.queue
        if queue is None:
            return True
        queue.start()
        queue.notify()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not await queue.wait_idle(CATCH_UP_POLL_S):
            if queue.failing or loop.time() >= deadline:
                break
        if queue.failing or (self.embedder is not None and self.embedder.available is False):
            return True
        return not await queue.index.pending(1)

    def stored(self) -> None:
        """A record was stored: embed it when the queue gets to it (never blocks)."""
        if self.queue is not None:
            self.queue.notify()

    async def aclose(self) -> None:
        if self.queue is not None:
            await self.queue.aclose()
        if self.embedder is not None:
            with contextlib.suppress(Exception):
                await self.embedder.aclose()
