"""The OpenAI-compatible embeddings call: `POST {base_url}/embeddings`.

Served by llama-server `--embeddings`, vLLM, Ollama and OpenAI; many chat
servers lack it. A 404, 405 or 501 (llama-server without `--embeddings`
answers 501) means the backend has no embeddings: `EmbeddingsUnsupported`,
which the caller remembers. Another HTTP error is `EmbeddingsRejected` (the
server is there but refused these inputs); a timeout, a refused connection or
a malformed body is `EmbeddingsError`: worth trying again later.
No retries here: recall waits for a query's vector only briefly, and the
background queue has its own pace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from newt.backend.http import async_client
from newt.errors import NewtError

CONNECT_TIMEOUT_S = 5.0
_UNSUPPORTED = frozenset({404, 405, 501})
_ERROR_TEXT_LIMIT = 300


class EmbeddingsError(NewtError):
    """The embeddings call failed this time (the message never holds the API key)."""


class EmbeddingsUnsupported(EmbeddingsError):
    """The backend does not serve embeddings."""


class EmbeddingsRejected(EmbeddingsError):
    """The backend answered with an error for these inputs (too long, say)."""


class EmbeddingsClient:
    """Embeds texts with `model` at `base_url` (normally ending in `/v1`)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout_s: float = 120.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._secret = api_key or None
        self._http = async_client(
            timeout=httpx.Timeout(timeout_s, connect=CONNECT_TIMEOUT_S),
            transport=transport,
            headers=headers,
        )

    def __repr__(self) -> str:
        return f"EmbeddingsClient(base_url={self.base_url!r}, model={self.model!r})"

    async def aclose(self) -> None:
        await self._http.aclose()

    async def embed(
        self, texts: Sequence[str], *, timeout_s: float | None = None
    ) -> list[list[float]]:
        """One vector per text, in order."""
        if not texts:
            return []
        body = {"model": self.model, "input": list(texts), "encoding_format": "float"}
        timeout = httpx.USE_CLIENT_DEFAULT if timeout_s is None else timeout_s
        try:
            response = await self._http.post(
                f"{self.base_url}/embeddings", json=body, timeout=timeout
            )
        except httpx.TimeoutException:
            raise EmbeddingsError("the embeddings request timed out") from None
        except httpx.HTTPError as exc:
            raise EmbeddingsError(f"the embeddings request failed: {type(exc).__name__}") from None
        if response.status_code in _UNSUPPORTED:
            raise EmbeddingsUnsupported(
                f"{self.base_url} serves no embeddings (HTTP {response.status_code})"
            )
        if response.status_code >= 400:
            raise EmbeddingsRejected(
                f"embeddings: HTTP {response.status_code}: {self._clean(response.text)}"
            )
        try:
            return _vectors(response.json(), len(texts))
        except (ValueError, TypeError, KeyError) as exc:
            raise EmbeddingsError(f"embeddings: malformed response ({exc})") from None

    def _clean(self, text: str) -> str:
        text = text[:_ERROR_TEXT_LIMIT]
        return text.replace(self._secret, "***") if self._secret else text


def _vectors(payload: Any, count: int) -> list[list[float]]:
    """The `data` vectors in input order (each item carries its `index`)."""
    items = payload["data"]
    if not isinstance(items, list) or len(items) != count:
        raise ValueError(f"expected {count} embeddings")
    ordered: list[list[float] | None] = [None] * count
    for position, item in enumerate(items):
        index = item.get("index", position)
        vector = item["embedding"]
        if not isinstance(vector, list) or not vector or not isinstance(index, int):
            raise ValueError("an embedding is not a list of numbers")
        ordered[index] = [float(x) for x in vector]
    if any(v is None for v in ordered):
        raise ValueError("embeddings are missing for some inputs")
    return [v for v in ordered if v is not None]
