"""Recall by meaning against real llama-servers: the background queue and rank
fusion with a llama-server started with --embeddings (mean pooling over its chat
model), and all-MiniLM-L6-v2 on a second llama-server (`[recall] embeddings_url`).
The same pieces against the loopback fake server are in
tests/unit/recall/test_recall_embeddings.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from newt.backend.embeddings import EmbeddingsClient
from newt.config import Config
from newt.recall import RecallEngine, RecallRequest
from newt.recall.embed_queue import EmbedQueue
from newt.recall.embedder import ServerEmbedder
from newt.recall.service import RecallParts
from newt.recall.vectors import VectorIndex
from newt.store import Store
from tests.support.llama_server import LlamaServer
from tests.support.session_helpers import add_turn


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "newt.db") as opened:
        yield opened


# -- llama-server --embeddings ----------------------------------------------------


@pytest.mark.llama
async def test_queue_embeds_in_the_background_and_resumes_after_a_restart(
    tmp_path: Path, llama_embeddings_server: LlamaServer
) -> None:
    path = tmp_path / "newt.db"
    server = llama_embeddings_server
    async with await Store.open(path) as store:
        for text in ("the locker code is 4417", "my sister lives in Lisbon", "harbor " * 200):
            await add_turn(store, text)
        embedder = ServerEmbedder(EmbeddingsClient(server.base_url, server.model))
        queue = EmbedQueue(store.db, embedder, batch=2)
        queue.start()
        await add_turn(store, "stored while the queue runs")
        queue.notify()
        assert await queue.wait_idle(120)
        # each turn is two records: the user's words and the reply
        assert embedder.available is True and queue.embedded == 8
        index = VectorIndex(store.db, embedder.space)
        assert await index.count() == 8
        await queue.aclose()
        await embedder.aclose()
        # Stored while nothing embeds (the app closed, or another process wrote).
        await add_turn(store, "the wifi password at the cabin is pinecone77")

    async with await Store.open(path) as store:
        embedder = ServerEmbedder(EmbeddingsClient(server.base_url, server.model))
        queue = EmbedQueue(store.db, embedder)
        queue.start()
        try:
            assert await queue.wait_idle(120)
            assert queue.embedded == 2  # only the new turn's records: nothing done twice
            assert await VectorIndex(store.db, embedder.space).count() == 10
            cur = await store.db.conn.execute("SELECT DISTINCT length(vector) FROM memory_vectors")
            sizes = {row[0] for row in await cur.fetchall()}
            assert len(sizes) == 1 and sizes.pop() % 4 == 0  # float32 blobs of one width
        finally:
            await queue.aclose()
            await embedder.aclose()


@pytest.mark.llama
async def test_recall_by_meaning_finds_what_shares_no_word(
    store: Store, llama_embeddings_server: LlamaServer
) -> None:
    server = llama_embeddings_server
    fact = await add_turn(store, "The locker code for the amber harbor is 4417.")
    for text in (
        "My sister Alice moved to Lisbon last spring.",
        "The dentist appointment is on Thursday at ten.",
        "We talked about the history of the printing press.",
    ):
        await add_turn(store, text)
    embedder = ServerEmbedder(EmbeddingsClient(server.base_url, server.model), query_timeout_s=60)
    queue = EmbedQueue(store.db, embedder)
    queue.start()
    try:
        assert await queue.wait_idle(120)
        lexical = RecallEngine(store)
        meaning = RecallEngine(store, embedder=embedder)
        typo = "teh lockr kode fr amber harbr"  # no word in common with the fact but one
        plain = "lockr kode harbr"  # no word in common at all
        assert (await lexical.recall(RecallRequest(plain))).memories == []
        found = (await meaning.recall(RecallRequest(plain, limit=1))).memories
        assert [m.key for m in found] == [fact]
        both = (await meaning.recall(RecallRequest(typo, limit=2))).memories
        assert both[0].key == fact  # found by both rankings: fused first
    finally:
        await queue.aclose()
        await embedder.aclose()


# -- a real embedding model: all-MiniLM-L6-v2 on its own llama-server ---------------

PARAPHRASE_FACTS = (
    "The locker code for the amber harbor is 4417.",
    "The wifi password at the lake cabin is moonpetal.",
    "My neighbour's cat is called Tofu.",
    "My bike lock combination is 2291.",
    "My flight to Lisbon leaves from gate E33.",
    "My sister's favourite colour is lavender.",
)


@pytest.mark.llama
async def test_minilm_recalls_a_paraphrase_that_words_miss(
    store: Store, minilm_server: LlamaServer
) -> None:
    """Through `[recall] embeddings_url` (as `newt --local` sets it), a question
    sharing no word with the fact finds it; lexical recall finds nothing."""
    keys = [await add_turn(store, fact) for fact in PARAPHRASE_FACTS]
    flight = keys[4]
    config = Config()
    config.recall.embeddings_url = minilm_server.base_url
    config.recall.embedding_model = minilm_server.model
    # the chat backend is elsewhere (nothing listens there): it is never asked
    parts = RecallParts(store, config, "http://127.0.0.1:9/v1", "chat-model")
    assert isinstance(parts.embedder, ServerEmbedder)
    assert parts.embedder.client.base_url == minilm_server.base_url
    parts.embedder.query_timeout_s = 60  # a loaded CI machine must not turn this lexical
    parts.start()
    try:
        assert parts.queue is not None and await parts.queue.wait_idle(120)
        assert parts.embedder.available is True and parts.queue.embedded == 2 * len(keys)
        question = "Where do I board the plane to Portugal?"
        lexical = (await RecallEngine(store).recall(RecallRequest(question))).memories
        assert flight not in [m.key for m in lexical]
        found = (await parts.engine.recall(RecallRequest(question, limit=1))).memories
        assert [m.key for m in found] == [flight]
        # and another paraphrase, to show it is not one lucky question
        found = (
            await parts.engine.recall(
                RecallRequest("Which hue does my sibling like best?", limit=1)
            )
        ).memories
        assert [m.key for m in found] == [keys[5]]
    finally:
        await parts.aclose()
