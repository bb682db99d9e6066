"""Meaning-based recall: the embeddings client, the vector table, the background
queue and rank fusion, against real SQLite, the mock backend (the client alone) and
the loopback fake server. The same against a real llama-server (started with
--embeddings, and all-MiniLM-L6-v2 on a second one through `[recall] embeddings_url`)
is in tests/e2e/models/test_llama_embeddings.py."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path

import pytest

from newt.backend.embeddings import (
    EmbeddingsClient,
    EmbeddingsError,
    EmbeddingsRejected,
    EmbeddingsUnsupported,
)
from newt.config import load_config
from newt.recall import RecallEngine, RecallRequest
from newt.recall.embed_queue import EmbedQueue
from newt.recall.embedder import (
    MAX_CHUNKS,
    PIECES_TAG,
    LocalEmbedder,
    ServerEmbedder,
    chunks,
    make_embedder,
    retired_spaces,
)
from newt.recall.engine import fuse
from newt.recall.pieces import record_pieces
from newt.recall.service import RecallParts
from newt.recall.vectors import LOAD_PAGE, VectorIndex, normalized, pack, unpack
from newt.store import Database, Store
from tests.support.fake_openai import FakeOpenAI
from tests.support.mock_backend import MockBackend
from tests.support.session_helpers import add_turn

EMBEDDINGS = ("POST", "/v1/embeddings")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "newt.db") as opened:
        yield opened


async def _record_id(store: Store, key: str) -> int:
    record = await store.records.get(key)
    assert record is not None
    return record.id


def _embedding_requests(fake: FakeOpenAI) -> int:
    return sum(1 for r in fake.requests if r.path == "/v1/embeddings")


# -- pieces ------------------------------------------------------------------------


def test_fuse_prefers_records_both_rankings_agree_on() -> None:
    lexical = [(1, -9.0), (2, -8.5), (3, -8.0)]
    meaning = [(3, 0.9), (4, 0.85)]
    fused = fuse(lexical, meaning, 0.5)
    assert [rowid for rowid, _ in fused] == [3, 1, 2, 4]
    assert fused[0][1] == pytest.approx(0.5 * 8 / 9 + 0.5)
    # Equal fused scores keep the lexical order (exact matches first).
    assert [r for r, _ in fuse([(7, -1.0), (8, -1.0)], [], 0.5)] == [7, 8]


def test_vectors_are_unit_float32_blobs() -> None:
    blob = pack([3.0, 4.0])
    assert len(blob) == 8
    assert unpack(blob) == pytest.approx((0.6, 0.8))
    assert unpack(pack([0.0, 0.0])) == (0.0, 0.0)


def test_chunks_cut_long_records_at_spaces() -> None:
    text = " ".join(f"word{i}" for i in range(600))
    pieces = chunks(text, size=1000)
    assert all(len(p) <= 1000 for p in pieces)
    assert " ".join(pieces) == text
    assert chunks("   ") == []
    assert len(chunks("x" * 100_000)) == MAX_CHUNKS  # bounded


def test_chunks_keep_sentences_whole_so_a_fact_stands_apart() -> None:
    turn = (
        "User: Quick update from my side: the meeting ran long again and nobody agreed. "
        "The wifi password at the lake cabin is moonpetal. Anyway, I still need to pack.\n"
        "Assistant: Sounds like a busy week!"
    )
    pieces = chunks(turn, size=80)
    assert pieces == [
        "User: Quick update from my side: the meeting ran long again and nobody agreed.",
        "The wifi password at the lake cabin is moonpetal. Anyway, I still need to pack.",
        "Assistant: Sounds like a busy week!",
    ]
    assert " ".join(pieces).split() == turn.split()  # nothing lost, nothing repeated
    assert chunks("One. Two. Three.", size=80) == ["One. Two. Three."]  # packed while they fit


async def _pending(index: VectorIndex, ids: list[int]) -> list[int]:
    """The pending records among `ids` (a turn also stores its reply's record)."""
    return [i for i, *_ in await index.pending(100) if i in ids]


async def test_vector_index_search_delete_and_update(store: Store) -> None:
    keys = [await add_turn(store, f"record {i}") for i in range(3)]
    ids = [await _record_id(store, k) for k in keys]
    index = VectorIndex(store.db, "space-a")
    assert await _pending(index, ids) == ids[::-1]  # newest first
    await index.store(ids[0], [[1.0, 0.0, 0.0]])
    await index.store(ids[1], [[0.0, 1.0, 0.0], [0.7, 0.7, 0.0]])  # two chunks: best counts
    await index.store(ids[2], [])  # unembeddable: never offered again, never found
    assert await _pending(index, ids) == []
    assert await index.count() == 2

    found = await index.search([1.0, 0.1, 0.0], 5)
    assert [i for i, _ in found] == [ids[0], ids[1]]
    assert found[1][1] == pytest.approx(0.77, abs=0.02)  # the chunk at 45 degrees
    assert await index.search([1.0, 0.1, 0.0], 5, exclude={ids[0]}) == [found[1]]
    assert await index.search([1.0, 0.0], 5) == []  # another dimension: nothing comparable

    # Another space's vectors never mix in; a deleted record takes its vectors along.
    assert await VectorIndex(store.db, "space-b").search([1.0, 0.0, 0.0], 5) == []
    await store.records.delete(keys[0])
    assert [i for i, _ in await index.search([1.0, 0.1, 0.0], 5)] == [ids[1]]
    # New content makes the old vectors stale: they go, and the record is pending again.
    await store.db.conn.execute(
        "UPDATE memory_records SET content = 'changed' WHERE id = ?", (ids[1],)
    )
    assert await index.search([1.0, 0.1, 0.0], 5) == []
    assert await _pending(index, ids) == [ids[1]]


async def test_search_covers_every_vector_and_drops_rows_that_went(store: Store) -> None:
    ids = [await _record_id(store, await add_turn(store, f"record {i}")) for i in range(6)]
    index = VectorIndex(store.db, "s")
    for n, record_id in enumerate(ids):
        await index.store(record_id, [[1.0, n / 10], [0.0, 1.0]])
    found = await index.search([1.0, 0.0], 10)
    # every record, the oldest too, scored by its best chunk
    assert [i for i, _ in found] == ids
    assert found[0][1] == pytest.approx(1.0)
    assert [i for i, _ in await index.search([1.0, 0.0], 2, exclude={ids[0]})] == ids[1:3]
    await index.store(ids[0], [[0.0, 1.0]])  # re-embedded: its old vectors went
    await store.db.conn.execute("DELETE FROM memory_records WHERE id = ?", (ids[1],))
    await store.db.conn.commit()
    found = await index.search([1.0, 0.0], 3)
    assert [i for i, _ in found] == ids[2:5]
    assert {i for i, _ in await index.search([0.0, 1.0], 10)} == set(ids) - {ids[1]}
    assert await index.search([1.0, 0.0, 0.0], 3) == []  # another model's length


async def test_a_store_is_loaded_in_pages_and_searched_whole(store: Store) -> None:
    rng = random.Random(5)
    count = 2 * LOAD_PAGE + 7
    async with store.db.transaction() as conn:
        await conn.executemany(
            "INSERT INTO memory_records(id, key, source, content, created_at)"
            " VALUES (?, ?, 'note', 'x', 0)",
            [(i, f"n{i}") for i in range(1, count + 1)],
        )
        await conn.executemany(
            "INSERT INTO memory_vectors(record_id, space, chunk, vector) VALUES (?, 's', 0, ?)",
            [(i, pack([rng.gauss(0, 1) for _ in range(8)])) for i in range(1, count + 1)],
        )
    index = VectorIndex(store.db, "s")
    query = [rng.gauss(0, 1) for _ in range(8)]
    found = await index.search(query, 5)
    assert index.held == count
    cur = await store.db.conn.execute("SELECT record_id, vector FROM memory_vectors")
    exact = sorted(
        ((sum(a * b for a, b in zip(unpack(blob), normalized(query), strict=True)), rid)
         for rid, blob in await cur.fetchall()),
        reverse=True,
    )[:5]  # fmt: skip
    assert [i for i, _ in found] == [rid for _, rid in exact]
    assert [c for _, c in found] == pytest.approx([c for c, _ in exact], abs=1e-5)


async def test_upgrade_adds_the_vector_table(tmp_path: Path) -> None:
    path = tmp_path / "newt.db"
    db = await Database.open(path, migrate=False)
    await db.migrate(target=5)
    await db.close()
    async with await Store.open(path) as store:
        key = await add_turn(store, "after the upgrade")
        index = VectorIndex(store.db, "s")
        await index.store(await _record_id(store, key), [[0.5, 0.5]])
        assert await index.count() == 1


async def test_make_embedder_follows_the_config() -> None:
    assert make_embedder("http://h/v1", "chat", mode="off") is None
    # "auto": in process, whatever the backend serves
    assert isinstance(make_embedder("http://h/v1", "chat"), LocalEmbedder)
    assert isinstance(make_embedder("", "chat"), LocalEmbedder)
    # "server": the chat backend's /v1/embeddings, or embeddings_url
    assert make_embedder("", "chat", mode="server") is None
    embedder = make_embedder(
        "http://h/v1", "chat", "k", mode="server", embedding_model="nomic-embed"
    )
    assert isinstance(embedder, ServerEmbedder)
    assert embedder.space == "http://h/v1 nomic-embed" + PIECES_TAG
    await embedder.aclose()
    embedder = make_embedder("http://h/v1/", "chat", mode="server")
    assert isinstance(embedder, ServerEmbedder)
    assert embedder.space == "http://h/v1 chat" + PIECES_TAG
    await embedder.aclose()
    # a configured embeddings_url is a server, also under "auto"
    embedder = make_embedder("http://h/v1", "chat", embeddings_url="http://e/v1")
    assert isinstance(embedder, ServerEmbedder) and embedder.client.base_url == "http://e/v1"
    await embedder.aclose()


# -- the client, against tests/support/mock_backend.py (no socket needed) --------


@pytest.mark.parametrize("status", [404, 405, 501])
async def test_client_reads_404_405_501_as_no_embeddings(
    mock_backend: MockBackend, status: int
) -> None:
    mock_backend.routes[EMBEDDINGS] = (status, {"error": {"message": "no"}})
    client = EmbeddingsClient(
        mock_backend.base_url, "m", api_key="sk-secret", transport=mock_backend.transport
    )
    try:
        with pytest.raises(EmbeddingsUnsupported):
            await client.embed(["hello"])
    finally:
        await client.aclose()


async def test_client_errors_are_typed_and_keep_the_key_out(mock_backend: MockBackend) -> None:
    mock_backend.routes[EMBEDDINGS] = (500, {"error": {"message": "bad key sk-secret"}})
    client = EmbeddingsClient(
        mock_backend.base_url, "m", api_key="sk-secret", transport=mock_backend.transport
    )
    try:
        with pytest.raises(EmbeddingsRejected) as caught:
            await client.embed(["hello"])
        assert "sk-secret" not in str(caught.value)
        mock_backend.routes[EMBEDDINGS] = (200, {"data": [{"embedding": "nope"}]})
        with pytest.raises(EmbeddingsError, match="malformed"):
            await client.embed(["hello"])
        mock_backend.routes[EMBEDDINGS] = (200, {"data": [{"index": 0, "embedding": [1, 2]}]})
        assert await client.embed(["hello"]) == [[1.0, 2.0]]
        with pytest.raises(EmbeddingsError, match="malformed"):
            await client.embed(["two", "inputs"])  # one vector for two inputs
        assert mock_backend.requests[-1].headers["authorization"] == "Bearer sk-secret"
        assert mock_backend.requests[-1].body["model"] == "m"
    finally:
        await client.aclose()
    unreachable = EmbeddingsClient("http://127.0.0.1:9/v1", "m")  # a real closed port
    try:
        with pytest.raises(EmbeddingsError):
            await unreachable.embed(["hello"])
    finally:
        await unreachable.aclose()


# -- the embedder and recall, against the loopback fake server ----------------------


async def test_without_embeddings_newt_asks_once_and_recalls_by_words(
    store: Store, fake_openai: FakeOpenAI
) -> None:
    # The fake server has no /v1/embeddings route: it answers 404.
    key = await add_turn(store, "the locker code for the amber harbor is 4417")
    embedder = ServerEmbedder(EmbeddingsClient(fake_openai.base_url, "m"))
    queue = EmbedQueue(store.db, embedder)
    queue.start()
    try:
        assert await queue.wait_idle(10)
        assert embedder.available is False and not queue.running
        engine = RecallEngine(store, embedder=embedder)
        for _ in range(3):
            response = await engine.recall(RecallRequest("locker codes"))
            assert response.memories[0].key == key
        await add_turn(store, "another record")
        queue.notify()
        await asyncio.sleep(0.05)
        assert _embedding_requests(fake_openai) == 1  # probed once, remembered
        assert await VectorIndex(store.db, embedder.space).count() == 0
    finally:
        await queue.aclose()
        await embedder.aclose()


async def test_a_failing_query_embedding_falls_back_to_words(
    store: Store, fake_openai: FakeOpenAI
) -> None:
    key = await add_turn(store, "the locker code for the amber harbor is 4417")
    other = await add_turn(store, "a record only the vectors would find")
    embedder = ServerEmbedder(EmbeddingsClient(fake_openai.base_url, "m"))
    index = VectorIndex(store.db, embedder.space)
    await index.store(await _record_id(store, other), [[1.0, 0.0]])
    engine = RecallEngine(store, embedder=embedder)

    fake_openai.routes[EMBEDDINGS] = (503, {"error": {"message": "loading model"}})
    response = await engine.recall(RecallRequest("locker code"))
    assert response.memories[0].key == key and other not in [m.key for m in response.memories]
    assert embedder.available is None  # a failure is not a "no": asked again next time

    fake_openai.routes[EMBEDDINGS] = (200, {"data": [{"index": 0, "embedding": [1.0, 0.1]}]})
    response = await engine.recall(RecallRequest("locker code"))
    found = [m.key for m in response.memories]
    assert found[0] == key and other in found  # both rankings, fused
    assert embedder.available is True


async def test_a_backend_that_keeps_refusing_is_taken_as_no_embeddings(
    store: Store, fake_openai: FakeOpenAI
) -> None:
    """A chat model on vLLM/Ollama answers 400, not 404: after a few refusals and
    no success ever, newt stops asking (before, every reply asked again)."""
    keys = [await add_turn(store, f"the locker code for harbor {i} is 44{i}7") for i in range(6)]
    fake_openai.routes[EMBEDDINGS] = (
        400,
        {"error": {"message": "this model does not support embeddings"}},
    )
    embedder = ServerEmbedder(EmbeddingsClient(fake_openai.base_url, "m"))
    queue = EmbedQueue(store.db, embedder)
    queue.start()
    try:
        assert await queue.wait_idle(10)
        assert embedder.available is False and not queue.running
        asked = _embedding_requests(fake_openai)
        assert asked <= 4  # the batch, then single texts until the third refusal
        await add_turn(store, "another record")
        queue.notify()
        await asyncio.sleep(0.05)
        engine = RecallEngine(store, embedder=embedder)
        response = await engine.recall(RecallRequest("locker code harbor 3"))
        assert keys[3] in [m.key for m in response.memories]
        assert _embedding_requests(fake_openai) == asked  # never asked again
    finally:
        await queue.aclose()
        await embedder.aclose()


async def test_refusals_after_a_success_are_about_the_input(
    store: Store, fake_openai: FakeOpenAI
) -> None:
    embedder = ServerEmbedder(EmbeddingsClient(fake_openai.base_url, "m"))
    try:
        fake_openai.routes[EMBEDDINGS] = (200, {"data": [{"index": 0, "embedding": [1.0, 0.0]}]})
        assert await embedder.embed_query("hello") == [1.0, 0.0]
        fake_openai.routes[EMBEDDINGS] = (400, {"error": {"message": "input too long"}})
        for _ in range(5):
            assert await embedder.embed_query("x" * 100) is None
        assert embedder.available is True
    finally:
        await embedder.aclose()


async def test_a_separate_embeddings_server_never_gets_the_chat_key(
    store: Store, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """`[recall] embeddings_url` on another host: vectors come from there, without
    the chat backend's API key; the chat backend is not asked for embeddings."""
    vector = (200, {"data": [{"index": 0, "embedding": [1.0, 0.0]}]})
    config_path = tmp_path / "config.toml"
    with FakeOpenAI() as other:
        other.routes[EMBEDDINGS] = vector
        config_path.write_text(
            f'[recall]\nembeddings_url = "{other.base_url}/"\nembedding_model = "minilm"\n'
        )
        config = load_config(config_path, env={"OPENAI_API_KEY": "sk-chat-secret"})
        assert config.api_key == "sk-chat-secret"
        parts = RecallParts(store, config, fake_openai.base_url, "chat-model")
        try:
            assert parts.embedder is not None
            assert await parts.embedder.embed_query("hello") == [1.0, 0.0]
        finally:
            await parts.aclose()
        (sent,) = [r for r in other.requests if r.path == "/v1/embeddings"]
        assert "authorization" not in sent.headers
        assert sent.body["model"] == "minilm"
        assert _embedding_requests(fake_openai) == 0

    # The chat backend's own URL as embeddings_url is the same host: it keeps the key.
    fake_openai.routes[EMBEDDINGS] = vector
    config.recall.embeddings_url = fake_openai.base_url
    parts = RecallParts(store, config, fake_openai.base_url, "chat-model")
    try:
        assert parts.embedder is not None
        assert await parts.embedder.embed_query("hello") == [1.0, 0.0]
    finally:
        await parts.aclose()
    sent = fake_openai.requests[-1]
    assert sent.path == "/v1/embeddings"
    assert sent.headers["authorization"] == "Bearer sk-chat-secret"


class _CountingEmbedder:
    """An embedder that gives every text the same unit vector."""

    def __init__(self, space: str) -> None:
        self.space = space
        self.available: bool | None = True
        self.texts: list[str] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]] | None:
        self.texts += texts
        return [[1.0, 0.0] for _ in texts]

    async def embed_query(self, text: str) -> list[float] | None:
        return [1.0, 0.0]

    async def aclose(self) -> None:
        pass


async def test_records_are_embedded_again_as_the_new_pieces_and_the_old_vectors_go(
    store: Store,
) -> None:
    """A store embedded before the piece scheme was named: every record is
    embedded again (a user's statement with its clauses, a reply as packed
    sentences), and the old vectors are deleted once all are done."""
    told = "We adopted a tortoise called Gus, and my brother built his pen."
    key = await add_turn(store, told)  # the user's message and its reply, "Noted."
    embedder = _CountingEmbedder("in-process m" + PIECES_TAG)
    olds = [VectorIndex(store.db, space) for space in retired_spaces(embedder.space)]
    assert olds[-1].space == "in-process m" and olds[0].space == "in-process m / pieces 2"
    for old in olds:
        for record_id in (await _record_id(store, key), await _record_id(store, "r" + key[1:])):
            await old.store(record_id, [[0.0, 1.0]])
    queue = EmbedQueue(store.db, embedder)
    queue.start()
    try:
        assert await queue.wait_idle(10)
    finally:
        await queue.aclose()
    assert told in embedder.texts and "my brother built his pen." in embedder.texts
    assert len(embedder.texts) == len(record_pieces(told, "user")) + 1  # the reply: one piece
    assert await VectorIndex(store.db, embedder.space).count() == 2
    assert [await old.count() for old in olds] == [0] * len(olds)


async def test_until_a_store_is_embedded_again_its_older_vectors_are_searched(
    store: Store,
) -> None:
    """Right after an upgrade nothing is in the new space yet: recall by
    meaning searches the same model's vectors of the older pieces meanwhile."""
    key = await add_turn(store, "the locker code for the amber harbor is 4417")
    other = await add_turn(store, "a record only the vectors would find")
    embedder = _CountingEmbedder("in-process m" + PIECES_TAG)
    embedder.embed_query = _query_vector([0.0, 1.0])  # type: ignore[method-assign]
    old = VectorIndex(store.db, retired_spaces(embedder.space)[0])  # the newest older scheme
    await old.store(await _record_id(store, key), [[1.0, 0.0]])
    await old.store(await _record_id(store, other), [[0.0, 1.0]])
    engine = RecallEngine(store, embedder=embedder)
    found = await engine.recall(RecallRequest("parrots", limit=1))
    assert [m.key for m in found.memories] == [other]
    # once a record is in the new space, the new space is searched alone
    await VectorIndex(store.db, embedder.space).store(await _record_id(store, key), [[0.0, 1.0]])
    found = await RecallEngine(store, embedder=embedder).recall(RecallRequest("parrots", limit=1))
    assert [m.key for m in found.memories] == [key]


def _query_vector(vector: list[float]) -> Callable[[str], Awaitable[list[float] | None]]:
    async def embed_query(text: str) -> list[float] | None:
        return vector

    return embed_query
