"""First run: look for an OpenAI-compatible server on the usual local ports."""

from __future__ import annotations

import asyncio

import httpx

from newt.backend.http import async_client

# (name, port) in the order we prefer them
LOCAL_SERVERS: list[tuple[str, int]] = [
    ("llama-server", 8080),
    ("Ollama", 11434),
    ("LM Studio", 1234),
    ("vLLM", 8000),
]


async def _models(client: httpx.AsyncClient, base_url: str) -> list[str]:
    response = await client.get(f"{base_url}/models")
    response.raise_for_status()
    data = response.json().get("data") or []
    return [str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")]


async def find_local_backend(
    host: str = "127.0.0.1", servers: list[tuple[str, int]] | None = None, timeout_s: float = 0.6
) -> tuple[str, str] | None:
    """(base_url, model) of the first local server that lists a model, else None."""
    candidates = servers or LOCAL_SERVERS
    async with async_client(timeout=timeout_s) as client:

        async def check(port: int) -> tuple[str, str] | None:
            base_url = f"http://{host}:{port}/v1"
            try:
                models = await _models(client, base_url)
            except (httpx.HTTPError, ValueError, KeyError, TypeError):
                return None
            return (base_url, models[0]) if models else None

        found = await asyncio.gather(*(check(port) for _, port in candidates))
    for hit in found:
        if hit is not None:
            return hit
    return None
