"""The session's recall: the engine, and (unless `[recall] embeddings = "off"`)
the embedder and the background queue that embeds records as they are stored.

By default ("auto") the embedder is all-MiniLM-L6-v2 in this process
(recall.embedder.LocalEmbedder): recall by meaning needs no server, and until
its weights are in newt's cache (fetched in the background on first use)
recall is by words. `[recall] embeddings_url` or `embeddings = "server"` asks
an OpenAI-compatible /v1/embeddings endpoint instead.
"""

from __future__ import annotations

import contextlib

from newt.config import Config
from newt.recall.embed_queue import EmbedQueue
from newt.recall.embedder import make_embedder
from newt.recall.engine import RecallEngine
from newt.store import Store


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
