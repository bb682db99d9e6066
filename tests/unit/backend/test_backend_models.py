"""What the backend serves, for the /model picker, from tests/support/mock_backend.py
dressed up as each kind of backend (reading a listing needs no socket); a backend that
never answers and a port where nothing listens are real connections (the loopback
fake, a closed port). The real llama-server: tests/e2e/models/test_llama_models.py."""

from __future__ import annotations

import time
from typing import Any

import pytest

from newt.backend.models import ModelListing, ModelListUnavailable, ServedModel, list_models
from tests.support.fake_openai import FakeOpenAI, llama_model_entry, ollama_tag
from tests.support.mock_backend import MockBackend


async def listing_of(backend: MockBackend, *args: Any) -> ModelListing:
    return await list_models(backend.base_url, *args, transport=backend.transport)


# -- what each backend lists ---------------------------------------------------------


async def test_openai_form_with_the_window_each_server_reports(mock_backend: MockBackend) -> None:
    mock_backend.models = [
        llama_model_entry("qwen3-4b.gguf", n_ctx=8192),  # llama-server: meta.n_ctx
        {"id": "Meta-Llama-3-8B", "object": "model", "max_model_len": 32768},  # vLLM
        {"id": "gpt-4o-mini", "object": "model", "owned_by": "openai"},  # plain OpenAI
        {"id": "router/x", "context_length": 131072},  # OpenRouter-style
        {"object": "model"},  # no id: skipped
    ]
    listing = await listing_of(mock_backend)
    assert listing.source == "GET /v1/models"
    assert listing.models == [
        ServedModel("gpt-4o-mini", None, "openai"),
        ServedModel("Meta-Llama-3-8B", 32768, ""),
        ServedModel("qwen3-4b.gguf", 8192, "Q4_K_M"),
        ServedModel("router/x", 131072, ""),
    ]
    assert [r.path for r in mock_backend.requests] == ["/v1/models"]


async def test_the_api_key_goes_with_the_listing(mock_backend: MockBackend) -> None:
    await listing_of(mock_backend, "sk-test")
    assert mock_backend.requests[-1].headers["authorization"] == "Bearer sk-test"


async def test_ollama_tags_when_v1_models_does_not_answer(mock_backend: MockBackend) -> None:
    mock_backend.models_status = 404
    mock_backend.ollama_tags = [ollama_tag("llama3.2:1b", "1.2B"), ollama_tag("qwen3:4b", "4.0B")]
    listing = await listing_of(mock_backend)
    assert listing.source == "GET /api/tags"
    assert listing.models == [
        ServedModel("llama3.2:1b", None, "1.2B · Q4_K_M"),
        ServedModel("qwen3:4b", None, "4.0B · Q4_K_M"),
    ]
    assert [r.path for r in mock_backend.requests] == ["/v1/models", "/api/tags"]


async def test_a_backend_without_a_list_says_why(mock_backend: MockBackend) -> None:
    mock_backend.models_status = 404  # and no /api/tags either
    with pytest.raises(ModelListUnavailable) as caught:
        await listing_of(mock_backend)
    assert "does not list its models" in caught.value.message
    assert "/v1/models answered 404" in caught.value.message
    assert "/api/tags answered 404" in caught.value.message


async def test_a_list_of_another_shape_is_no_list(mock_backend: MockBackend) -> None:
    mock_backend.routes[("GET", "/v1/models")] = (200, "<html>a login page</html>")
    with pytest.raises(ModelListUnavailable, match="sent no model list"):
        await listing_of(mock_backend)


# -- over a real socket ---------------------------------------------------------------


async def test_a_silent_backend_times_out(fake_openai: FakeOpenAI) -> None:
    fake_openai.models_delay_s = 30
    started = time.monotonic()
    with pytest.raises(ModelListUnavailable, match="did not"):
        await list_models(fake_openai.base_url, timeout_s=0.3, total_s=1.0)
    assert time.monotonic() - started < 3


async def test_nothing_listening_is_said_at_once() -> None:
    with pytest.raises(ModelListUnavailable, match="could not connect"):
        await list_models("http://127.0.0.1:9/v1")
