"""What the backend serves, for the /model picker, from the fake server dressed up as
each kind of backend (the real llama-server: tests/e2e/models/test_llama_models.py)."""

from __future__ import annotations

import time

import pytest

from newt.backend.models import ModelListUnavailable, ServedModel, list_models
from tests.support.fake_openai import FakeOpenAI, llama_model_entry, ollama_tag


async def test_openai_form_with_the_window_each_server_reports(fake_openai: FakeOpenAI) -> None:
    fake_openai.models = [
        llama_model_entry("qwen3-4b.gguf", n_ctx=8192),  # llama-server: meta.n_ctx
        {"id": "Meta-Llama-3-8B", "object": "model", "max_model_len": 32768},  # vLLM
        {"id": "gpt-4o-mini", "object": "model", "owned_by": "openai"},  # plain OpenAI
        {"id": "router/x", "context_length": 131072},  # OpenRouter-style
        {"object": "model"},  # no id: skipped
    ]
    listing = await list_models(fake_openai.base_url)
    assert listing.source == "GET /v1/models"
    assert listing.models == [
        ServedModel("gpt-4o-mini", None, "openai"),
        ServedModel("Meta-Llama-3-8B", 32768, ""),
        ServedModel("qwen3-4b.gguf", 8192, "Q4_K_M"),
        ServedModel("router/x", 131072, ""),
    ]
    assert [r.path for r in fake_openai.requests] == ["/v1/models"]


async def test_the_api_key_goes_with_the_listing(fake_openai: FakeOpenAI) -> None:
    await list_models(fake_openai.base_url, "sk-test")
    assert fake_openai.requests[-1].headers["authorization"] == "Bearer sk-test"


async def test_ollama_tags_when_v1_models_does_not_answer(fake_openai: FakeOpenAI) -> None:
    fake_openai.models_status = 404
    fake_openai.ollama_tags = [ollama_tag("llama3.2:1b", "1.2B"), ollama_tag("qwen3:4b", "4.0B")]
    listing = await list_models(fake_openai.base_url)
    assert listing.source == "GET /api/tags"
    assert listing.models == [
        ServedModel("llama3.2:1b", None, "1.2B · Q4_K_M"),
        ServedModel("qwen3:4b", None, "4.0B · Q4_K_M"),
    ]
    assert [r.path for r in fake_openai.requests] == ["/v1/models", "/api/tags"]


async def test_a_backend_without_a_list_says_why(fake_openai: FakeOpenAI) -> None:
    fake_openai.models_status = 404  # and no /api/tags either
    with pytest.raises(ModelListUnavailable) as caught:
        await list_models(fake_openai.base_url)
    assert "does not list its models" in caught.value.message
    assert "/v1/models answered 404" in caught.value.message
    assert "/api/tags answered 404" in caught.value.message


async def test_a_list_of_another_shape_is_no_list(fake_openai: FakeOpenAI) -> None:
    fake_openai.routes[("GET", "/v1/models")] = (200, "<html>a login page</html>")
    with pytest.raises(ModelListUnavailable, match="sent no model list"):
        await list_models(fake_openai.base_url)


async def test_a_silent_backend_times_out(fake_openai: FakeOpenAI) -> None:
    fake_openai.models_delay_s = 30
    started = time.monotonic()
    with pytest.raises(ModelListUnavailable, match="did not"):
        await list_models(fake_openai.base_url, timeout_s=0.3, total_s=1.0)
    assert time.monotonic() - started < 3


async def test_nothing_listening_is_said_at_once() -> None:
    with pytest.raises(ModelListUnavailable, match="could not connect"):
        await list_models("http://127.0.0.1:9/v1")
