"""The sampling newt's own llama-server uses when a request sets none, read back
from the real server (`GET /props`): the publisher's values for the catalogue's
Qwen2.5-Coder-1.5B and for SmolLM2, not llama-server's own defaults
(temperature 0.8, top-k 40, top-p 0.95, repeat penalty 1.0)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from newt.agent.local.managed_server import managed_server
from newt.local.server import default_model_path
from tests.support.llama_server import obtain_chat_model, obtain_llama_server

pytestmark = pytest.mark.llama


def _defaults(model: Path) -> dict[str, float]:
    binary, _ = obtain_llama_server()
    server = managed_server(model, binary=binary)
    server.start()
    try:
        props = httpx.get(f"{server.root_url}/props", timeout=120).json()
    finally:
        server.stop()
    params = props["default_generation_settings"]["params"]
    names = ("temperature", "top_k", "top_p", "min_p", "repeat_penalty")
    return {name: round(params[name], 3) for name in names}


def test_the_catalogue_model_samples_as_qwen_ships_it() -> None:
    assert _defaults(obtain_chat_model()) == {
        "temperature": 0.7, "top_k": 20, "top_p": 0.8, "min_p": 0.05, "repeat_penalty": 1.1,
    }  # fmt: skip


def test_smollm2_samples_as_its_model_card_shows() -> None:
    obtain_llama_server()  # the script that fetches it puts SmolLM2 in the cache too
    if not default_model_path().is_file():
        pytest.fail(f"{default_model_path()} is missing: run scripts/get_llama_server.sh")
    assert _defaults(default_model_path()) == {
        "temperature": 0.2, "top_k": 40, "top_p": 0.9, "min_p": 0.05, "repeat_penalty": 1.0,
    }  # fmt: skip
