"""/model on the real llama-server: newt restarts it between SmolLM2-135M-Instruct and
Gemma 3 270M, each with the window newt chose. The same with a stand-in server
(its command line, window and requests) is in
tests/integration/local/models/test_local_switch.py."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from newt.agent.local.managed_server import KnownModel, ManagedLocal, managed_server
from newt.config import load_config
from newt.ui.app import NewtApp
from newt.ui.widgets.messages import AssistantMessage
from tests.support.local_machine import no_local_server
from tests.support.pilot import chat_ready, type_and_send, wait_for, wait_idle


async def settle(pilot: Any, screen: Any, seconds: float = 300.0) -> None:
    """Wait for the turn to finish: on the real server, a first turn also asks
    the model once whether it calls tools, and a loaded machine is slow."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            await wait_idle(pilot, screen)
            return
        except AssertionError:
            continue
    raise AssertionError(f"turn not finished after {seconds:g} s")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NEWT_HOME", str(tmp_path / "home"))
    for var in ("NEWT_CONFIG", "OPENAI_BASE_URL", "OPENAI_API_KEY", "NEWT_LLAMA_SERVER"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "home"


@pytest.mark.llama
async def test_switching_between_smollm2_and_gemma_on_the_real_llama_server(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real llama-server restarted by /model: /props names the model file and the
    window newt chose (SmolLM2 2048, Gemma's trained 32k cut to 8192). Replies are
    capped at 24 tokens so the 2-core machine answers in seconds (the cap is not
    what is tested)."""
    from newt.agent.local import managed_server as local_switch
    from newt.local.server import default_model_path
    from tests.support.llama_server import obtain_llama_server

    binary, gemma = obtain_llama_server()
    smol = default_model_path()
    if not smol.is_file():
        pytest.fail(f"{smol} is missing: run scripts/get_llama_server.sh", pytrace=False)
    monkeypatch.setattr(local_switch, "reply_token_cap", lambda ctx: 24)
    known = [
        KnownModel("SmolLM2-135M-Instruct", smol, "tiny", ""),
        KnownModel("gemma-3-270m", gemma, "a base model", str(gemma), "gemma"),
    ]
    config = load_config()
    server = managed_server(smol, binary=binary)
    await server.astart()
    local = ManagedLocal(server, config, known=lambda: list(known))

    def props() -> tuple[str, int]:
        data = httpx.get(f"{local.server.root_url}/props", timeout=10).json()
        n_ctx = data.get("default_generation_settings", {}).get("n_ctx") or data.get("n_ctx")
        return Path(data["model_path"]).name, int(n_ctx)

    app = NewtApp(config, discover=no_local_server, local=local)
    try:
        async with app.run_test(size=(110, 40)) as pilot:
            screen = await chat_ready(pilot)
            assert props() == (smol.name, 2048)
            await type_and_send(pilot, "What do bees make?")
            await settle(pilot, screen)
            await type_and_send(pilot, "/model gemma-3-270m")
            await wait_for(pilot, screen, "Now running gemma-3-270m")
            assert props() == (gemma.name, 8192)
            await type_and_send(pilot, "And flowers?")
            await settle(pilot, screen)
            replies = [m.entry.text for m in screen.query(AssistantMessage)]
            assert len(replies) == 2 and all(r.strip() for r in replies), replies
            await type_and_send(pilot, "/model SmolLM2-135M-Instruct")
            await wait_for(pilot, screen, "Now running SmolLM2-135M-Instruct")
            assert props() == (smol.name, 2048)
    finally:
        local.stop()
    assert load_config().backend.local_model == ""  # SmolLM2 is remembered as the default
