"""What a real llama-server serves, for the /model picker: its /v1/models lists the
loaded GGUF with the live n_ctx, and the picker shows it and switches to it. The
same against the fake server is in tests/unit/backend/test_backend_models.py and
tests/integration/ui/test_ui_models.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from newt.backend.models import list_models
from newt.config import load_config
from newt.ui.app import NewtApp
from tests.support.llama_server import LlamaServer
from tests.support.pilot import chat_ready, picker_ready, type_and_send, wait_idle


@pytest.mark.llama
async def test_real_llama_server_lists_its_gguf_with_the_live_window(
    llama_server: LlamaServer,
) -> None:
    listing = await list_models(llama_server.base_url)
    assert listing.source == "GET /v1/models"
    [model] = listing.models
    assert model.id.endswith(llama_server.model_path.name)
    assert model.context_window == llama_server.n_ctx  # meta.n_ctx: the -c it runs with
    assert "params" in model.detail


@pytest.mark.llama
async def test_model_picker_against_the_real_llama_server(
    _isolated_home: Path, llama_server: LlamaServer
) -> None:
    """llama-server lists the GGUF it loaded, under its path, with the live n_ctx."""
    config = load_config(base_url=llama_server.base_url, model=llama_server.model)
    app = NewtApp(config)
    async with app.run_test(size=(140, 34)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "/model")
        picker = await picker_ready(pilot)
        [choice] = picker.shown
        assert choice.id.endswith(llama_server.model_path.name)
        assert choice.detail.startswith(f"context {llama_server.n_ctx:,} · ")
        for key in "gguf":
            await pilot.press(key)
        await pilot.press("enter")
        await wait_idle(pilot, screen)
        session: Any = app.session
        assert session.model == choice.id
        status = session.memory_status()
        assert (status.context_tokens, status.budget_source) == (llama_server.n_ctx, "backend")
