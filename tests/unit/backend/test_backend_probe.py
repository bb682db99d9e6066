"""probe_context_window against tests/support/mock_backend.py dressed up as each backend
(the probe's reading of each answer needs no socket), and against a closed port for
the quiet failure only a connection shows."""

from __future__ import annotations

import socket
from typing import Any

from newt.backend.probe import ProbeResult, probe_context_window, server_root
from tests.support.mock_backend import MockBackend


async def probe(backend: MockBackend, model: str, **kw: Any) -> ProbeResult:
    return await probe_context_window(backend.base_url, model, transport=backend.transport, **kw)


def test_server_root_strips_v1():
    assert server_root("http://h:8080/v1/") == "http://h:8080"
    assert server_root("http://h:8080/v1") == "http://h:8080"
    assert server_root("http://h:8080") == "http://h:8080"


async def test_llama_server_props(mock_backend: MockBackend):
    mock_backend.n_ctx = 1024
    result = await probe(mock_backend, "any", api_key="sk-probe")
    assert result == ProbeResult(1024, "llama-server /props")
    method, path, headers, _ = mock_backend.requests[0]
    assert (method, path) == ("GET", "/props")  # /v1 stripped for the native route
    assert headers["authorization"] == "Bearer sk-probe"


async def test_vllm_models_matching_id(mock_backend: MockBackend):
    mock_backend.n_ctx = None
    mock_backend.models = [
        {"id": "other", "max_model_len": 4096},
        {"id": "Qwen/Qwen2.5-7B", "max_model_len": 32768},
    ]
    result = await probe(mock_backend, "Qwen/Qwen2.5-7B")
    assert result == ProbeResult(32768, "vllm /v1/models")


async def test_vllm_single_model_answers_to_any_name(mock_backend: MockBackend):
    mock_backend.n_ctx = None
    mock_backend.models = [{"id": "served", "max_model_len": 16384}]
    assert (await probe(mock_backend, "alias")).context_window == 16384


async def test_ollama_loaded_model_from_api_ps(mock_backend: MockBackend):
    mock_backend.n_ctx = None
    mock_backend.routes[("GET", "/api/ps")] = (
        200,
        {
            "models": [
                {"name": "llama3.2:latest", "model": "llama3.2:latest", "context_length": 4096}
            ]
        },
    )
    result = await probe(mock_backend, "llama3.2:latest")
    assert result == ProbeResult(4096, "ollama /api/ps")


async def test_ollama_show_prefers_num_ctx_over_training_length(mock_backend: MockBackend):
    mock_backend.n_ctx = None
    mock_backend.routes[("POST", "/api/show")] = (
        200,
        {
            "parameters": 'num_ctx                        8192\nstop "<|eot_id|>"',
            "model_info": {"general.architecture": "llama", "llama.context_length": 131072},
        },
    )
    result = await probe(mock_backend, "llama3.2")
    assert result == ProbeResult(8192, "ollama /api/show")
    show = [r for r in mock_backend.requests if r.path == "/api/show"]
    assert show[0].body == {"model": "llama3.2"}


async def test_ollama_show_model_info(mock_backend: MockBackend):
    mock_backend.n_ctx = None
    mock_backend.routes[("POST", "/api/show")] = (
        200,
        {"model_info": {"gemma3.context_length": 32768}},
    )
    result = await probe(mock_backend, "gemma3")
    assert result == ProbeResult(32768, "ollama /api/show")


async def test_lmstudio_loaded_instance_beats_max(mock_backend: MockBackend):
    mock_backend.n_ctx = None
    model = {
        "key": "qwen/qwen3-8b",
        "max_context_length": 32768,
        "loaded_instances": [{"id": "qwen/qwen3-8b", "config": {"context_length": 4096}}],
    }
    mock_backend.routes[("GET", "/api/v1/models")] = (200, {"models": [model]})
    result = await probe(mock_backend, "qwen/qwen3-8b")
    assert result == ProbeResult(4096, "lmstudio /api/v1/models")


async def test_lmstudio_not_loaded_uses_max(mock_backend: MockBackend):
    mock_backend.n_ctx = None
    model = {"key": "m", "max_context_length": 32768, "loaded_instances": []}
    mock_backend.routes[("GET", "/api/v1/models")] = (200, {"models": [model]})
    assert (await probe(mock_backend, "m")).context_window == 32768


async def test_lmstudio_v0(mock_backend: MockBackend):
    mock_backend.n_ctx = None
    mock_backend.routes[("GET", "/api/v0/models")] = (
        200,
        {"data": [{"id": "m", "state": "not-loaded", "max_context_length": 8192}]},
    )
    assert await probe(mock_backend, "m") == ProbeResult(8192, "lmstudio /api/v0/models")


async def test_plain_openai_offers_nothing(mock_backend: MockBackend):
    mock_backend.n_ctx = None  # /props 404, /v1/models without max_model_len, no native routes
    mock_backend.routes[("GET", "/api/v1/models")] = (200, "<html>not json</html>")
    assert await probe(mock_backend, "gpt-4o") == ProbeResult(None, "none")


async def test_unreachable_server_is_quiet():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = await probe_context_window(f"http://127.0.0.1:{port}/v1", "m")
    assert result == ProbeResult(None, "none")
