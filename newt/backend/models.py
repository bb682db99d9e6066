"""Which models the backend serves, for the /model picker.

Asked in order, each with a short timeout, under one overall deadline:

1. OpenAI form   GET {base}/models   `data[].id`; the context window where the
                 entry carries it: llama-server `meta.n_ctx` (the live size),
                 vLLM `max_model_len`, LM Studio `loaded_context_length` /
                 `max_context_length`, OpenRouter-style `context_length`.
2. Ollama form   GET {root}/api/tags `models[].name` (no window in the list).

A backend that lists nothing (404, an error, a body of another shape, no
answer in time) raises `ModelListUnavailable` with a sentence for the user;
the picker then takes a typed name instead.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx

from newt.backend.probe import server_root
from newt.errors import NewtError

LIST_TIMEOUT_S = 3.0
"""Per request."""
LIST_TOTAL_S = 5.0
"""For the whole listing: the picker must not wait longer."""


@dataclass(frozen=True)
class ServedModel:
    id: str
    context_window: int | None = None
    detail: str = ""
    """A short description the list offers (quantization, size, owner)."""


@dataclass(frozen=True)
class ModelListing:
    models: list[ServedModel]
    source: str  # "GET /v1/models" or "GET /api/tags"


class ModelListUnavailable(NewtError):
    """The backend did not list its models; the message says why, for the user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


async def list_models(
    base_url: str,
    api_key: str | None = None,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    timeout_s: float = LIST_TIMEOUT_S,
    total_s: float = LIST_TOTAL_S,
) -> ModelListing:
    base = base_url.rstrip("/")
    try:
        async with asyncio.timeout(total_s):
            return await _list(base, api_key, transport, timeout_s)
    except TimeoutError:
        raise ModelListUnavailable(f"{base} did not list its models within {total_s:g} s") from None


async def _list(
    base: str, api_key: str | None, transport: httpx.AsyncBaseTransport | None, timeout_s: float
) -> ModelListing:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    reasons: list[str] = []
    async with httpx.AsyncClient(timeout=timeout_s, transport=transport, headers=headers) as http:
        for source, url, parse in (
            ("GET /v1/models", f"{base}/models", _openai_models),
            ("GET /api/tags", f"{server_root(base)}/api/tags", _ollama_tags),
        ):
            try:
                response = await http.get(url)
            except (httpx.ConnectError, httpx.ConnectTimeout):
                raise ModelListUnavailable(f"could not connect to {base}") from None
            except httpx.TimeoutException:
                reasons.append(f"{url} did not answer within {timeout_s:g} s")
                continue
            except httpx.HTTPError as exc:
                reasons.append(f"{url} failed ({type(exc).__name__})")
                continue
            if response.status_code != 200:
                reasons.append(f"{url} answered {response.status_code}")
                continue
            try:
                models = parse(response.json())
            except ValueError:
                models = None
            if models is None:
                reasons.append(f"{url} sent no model list")
                continue
            return ModelListing(sorted(models, key=lambda m: m.id.lower()), source)
    raise ModelListUnavailable("the backend does not list its models: " + "; ".join(reasons))


def _openai_models(data: Any) -> list[ServedModel] | None:
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    found: list[ServedModel] = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            continue
        meta = _dict(entry.get("meta"))
        window = _first_positive(
            meta.get("n_ctx"),
            entry.get("max_model_len"),
            entry.get("loaded_context_length"),
            entry.get("context_length"),
            entry.get("max_context_length"),
        )
        detail = " · ".join(
            str(part) for part in (meta.get("ftype"), _params(meta.get("n_params"))) if part
        ) or str(entry.get("owned_by") or "")
        found.append(ServedModel(entry["id"], window, detail))
    return found


def _ollama_tags(data: Any) -> list[ServedModel] | None:
    entries = data.get("models") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    found: list[ServedModel] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        name = entry.get("name") or entry.get("model")
        if not isinstance(name, str) or not name:
            continue
        details = _dict(entry.get("details"))
        detail = " · ".join(
            str(details[k]) for k in ("parameter_size", "quantization_level") if details.get(k)
        )
        found.append(ServedModel(name, None, detail))
    return found


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _first_positive(*values: Any) -> int | None:
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _params(n: Any) -> str:
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        return ""
    return f"{n / 1e9:.1f}B params" if n >= 1e9 else f"{n / 1e6:.0f}M params"
