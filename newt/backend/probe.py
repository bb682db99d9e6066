"""Ask the server how big the model's context window is, where it offers that.

Tried in order, each with a short timeout; the first answer wins and every
failure is quiet (plain OpenAI offers none of these, and that is fine):

1. llama-server   GET  {root}/props       default_generation_settings.n_ctx (the live size)
2. vLLM           GET  {base}/models      max_model_len of the entry whose id is the model
3. Ollama         GET  {root}/api/ps      context_length of the loaded model (the live size)
                  POST {root}/api/show    num_ctx from parameters, else model_info's
                                          *.context_length (the training maximum)
4. LM Studio      GET  {root}/api/v1/models  the loaded instance's context_length, else
                                          max_context_length (also /api/v0/models)

``base`` is the configured base_url (".../v1"); ``root`` is the same without
the trailing ``/v1``, where the native routes live.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from newt.backend.http import async_client

logger = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 2.0
# A server that hangs on every route must not stall startup for 6 x 2 s.
PROBE_TOTAL_S = 6.0


@dataclass(frozen=True)
class ProbeResult:
    context_window: int | None
    source: str  # e.g. "llama-server /props"; "none" when nothing answered


def server_root(base_url: str) -> str:
    """base_url without a trailing /v1 (native llama-server/Ollama/LM Studio routes)."""
    root = base_url.rstrip("/")
    return root[:-3] if root.endswith("/v1") else root


async def probe_context_window(
    base_url: str,
    model: str,
    api_key: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    *,
    timeout_s: float = PROBE_TIMEOUT_S,
    total_s: float = PROBE_TOTAL_S,
) -> ProbeResult:
    try:
        async with asyncio.timeout(total_s):
            return await _probe(base_url, model, api_key, transport, timeout_s)
    except TimeoutError:
        logger.debug("probe of %s gave up after %.1f s", base_url, total_s)
        return ProbeResult(None, "none")


async def _probe(
    base_url: str,
    model: str,
    api_key: str | None,
    transport: httpx.AsyncBaseTransport | None,
    timeout_s: float,
) -> ProbeResult:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with async_client(timeout=timeout_s, transport=transport, headers=headers) as http:
        probe = _Prober(http, base_url.rstrip("/"), server_root(base_url), model)
        steps: list[tuple[str, Callable[[], Awaitable[int | None]]]] = [
            ("llama-server /props", probe.llama_props),
            ("vllm /v1/models", probe.vllm_models),
            ("ollama /api/ps", probe.ollama_ps),
            ("ollama /api/show", probe.ollama_show),
            ("lmstudio /api/v1/models", probe.lmstudio_v1),
            ("lmstudio /api/v0/models", probe.lmstudio_v0),
        ]
        for source, step in steps:
            try:
                window = await step()
            except (httpx.ConnectError, httpx.ConnectTimeout):
                # Nothing listens there: no other route will answer either.
                logger.debug("probe: %s unreachable", base_url)
                break
            except (httpx.HTTPError, ValueError) as exc:
                logger.debug("probe %s failed: %s", source, type(exc).__name__)
                continue
            if window:
                return ProbeResult(window, source)
    return ProbeResult(None, "none")


class _Prober:
    def __init__(self, http: httpx.AsyncClient, base: str, root: str, model: str) -> None:
        self.http, self.base, self.root, self.model = http, base, root, model

    async def _json(self, method: str, url: str, **kw: Any) -> Any:
        response = await self.http.request(method, url, **kw)
        if response.status_code != 200:
            return None
        return response.json()

    async def llama_props(self) -> int | None:
        data = await self._json("GET", f"{self.root}/props")
        settings = _get(data, "default_generation_settings")
        return _positive(_get(settings, "n_ctx"))

    async def vllm_models(self) -> int | None:
        data = await self._json("GET", f"{self.base}/models")
        entries = [e for e in _list(_get(data, "data")) if isinstance(e, dict)]
        for entry in entries:
            if entry.get("id") == self.model:
                return _positive(entry.get("max_model_len"))
        # A single served model answers to whatever name the client uses.
        if len(entries) == 1:
            return _positive(entries[0].get("max_model_len"))
        return None

    async def ollama_ps(self) -> int | None:
        data = await self._json("GET", f"{self.root}/api/ps")
        for entry in _list(_get(data, "models")):
            if isinstance(entry, dict) and self.model in (entry.get("name"), entry.get("model")):
                return _positive(entry.get("context_length"))
        return None

    async def ollama_show(self) -> int | None:
        data = await self._json("POST", f"{self.root}/api/show", json={"model": self.model})
        if not isinstance(data, dict):
            return None
        # num_ctx is what Ollama actually runs with; model_info is the training maximum.
        for line in str(data.get("parameters") or "").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "num_ctx" and parts[1].isdigit():
                return _positive(int(parts[1]))
        info = data.get("model_info")
        if isinstance(info, dict):
            for key, value in info.items():
                if key.endswith(".context_length"):
                    return _positive(value)
        return None

    async def lmstudio_v1(self) -> int | None:
        data = await self._json("GET", f"{self.root}/api/v1/models")
        for entry in _list(_get(data, "models")):
            if not isinstance(entry, dict) or self.model not in (entry.get("key"), entry.get("id")):
                continue
            for instance in _list(entry.get("loaded_instances")):
                loaded = _positive(_get(_get(instance, "config"), "context_length"))
                if loaded:
                    return loaded
            return _positive(entry.get("max_context_length"))
        return None

    async def lmstudio_v0(self) -> int | None:
        data = await self._json("GET", f"{self.root}/api/v0/models")
        for entry in _list(_get(data, "data")):
            if isinstance(entry, dict) and entry.get("id") == self.model:
                return _positive(entry.get("loaded_context_length")) or _positive(
                    entry.get("max_context_length")
                )
        return None


def _get(data: Any, key: str) -> Any:
    return data.get(key) if isinstance(data, dict) else None


def _list(data: Any) -> list[Any]:
    return data if isinstance(data, list) else []


def _positive(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None
