"""Meaning-based recall's view of the backend: embed texts, or learn that it cannot.

The first answer decides: a backend that says it serves no embeddings
(`EmbeddingsUnsupported`) is remembered as such for this process and never
asked again, so without an embeddings endpoint recall is purely lexical and
costs nothing extra. So is a backend that has never embedded anything and
refused REFUSALS_BEFORE_NO requests in a row (a chat model on vLLM or Ollama
answers 400 "does not support embeddings", not 404): asking again before
every reply would only add a round trip. A timeout or refused connection
leaves the question open: the next call tries again.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from newt.backend.embeddings import (
    EmbeddingsClient,
    EmbeddingsError,
    EmbeddingsRejected,
    EmbeddingsUnsupported,
)

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
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


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


class Embedder:
    """Embeds with one client; `space` names its model so vectors of another never mix."""

    def __init__(self, client: EmbeddingsClient, *, query_timeout_s: float = QUERY_TIMEOUT_S):
        self.client = client
        self.space = f"{client.base_url} {client.model}"
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


def make_embedder(
    base_url: str,
    chat_model: str,
    api_key: str | None = None,
    *,
    mode: str = "auto",
    embedding_model: str = "",
    embeddings_url: str = "",
    space: str = "",
) -> Embedder | None:
    """The session's embedder from `[recall] embeddings`, `embedding_model` and
    `embeddings_url`: None when turned off (or there is no backend to ask).

    A separate embeddings server gets the API key only when it is the chat
    backend's own URL: the chat key must never reach another host.
    """
    if mode == "off":
        return None
    chat_url = base_url.rstrip("/")
    url = embeddings_url.rstrip("/") or chat_url
    if not url:
        return None
    key = api_key if url == chat_url else None
    embedder = Embedder(EmbeddingsClient(url, embedding_model or chat_model, key))
    if space:
        embedder.space = space
    return embedder
