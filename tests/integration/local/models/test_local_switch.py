"""/model lists the local models newt knows when it runs its own llama-server, and
choosing one is one step: the server restarts with that model and its window on
the same port, the conversation goes on, and the choice is remembered.

Real app (Pilot), real session and store; the llama-server is a stand-in
(tests/support/fake_openai.py takes llama-server's flags, `-c` sets the window it
reports), so what is checked is the process newt runs: its command line, its
window, the model name in each request. The same with the real llama-server
between SmolLM2 and Gemma 3 270M is tests/e2e/models/test_llama_local_switch.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from newt.agent.local.managed_server import KnownModel, ManagedLocal, managed_server
from newt.config import load_config
from newt.ui.app import NewtApp
from newt.ui.widgets.messages import AssistantMessage
from tests.support.fake_hub import gguf_bytes
from tests.support.local_machine import no_local_server
from tests.support.paths import FAKE_SERVER
from tests.support.pilot import (
    chat_ready,
    picker_ready,
    type_and_send,
    wait_for,
    wait_idle,
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NEWT_HOME", str(tmp_path / "home"))
    for var in ("NEWT_CONFIG", "OPENAI_BASE_URL", "OPENAI_API_KEY", "NEWT_LLAMA_SERVER"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "home"


def model_file(path: Path, trained_for: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    meta: dict[str, str | int] = {"general.architecture": "llama"}
    path.write_bytes(gguf_bytes({**meta, "llama.context_length": trained_for}, 4096))
    return path


def cmdline(local: ManagedLocal) -> list[str]:
    assert local.server.process is not None
    pid = local.server.process.pid
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


async def test_model_lists_the_local_models_and_switches_in_one_step(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_in = tmp_path / "llama-server"
    fake = FAKE_SERVER
    stand_in.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{fake}" "$@"\n')
    stand_in.chmod(0o755)
    monkeypatch.setenv("NEWT_LLAMA_SERVER", str(stand_in))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # no catalogue model downloaded
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    small = model_file(tmp_path / "m" / "Small-4k.gguf", 4096)
    big = model_file(tmp_path / "m" / "Big-32k.gguf", 32768)
    known = [
        KnownModel("small-4k", small, "found in LM Studio", str(small), "small"),
        KnownModel("big-32k", big, "Big · 0.0 GB · MIT", "big-32k", "Big 32k"),
    ]
    config = load_config()
    server = managed_server(small)
    await server.astart()
    local = ManagedLocal(server, config, known=lambda: list(known))
    port, first_args = server.port, cmdline(local)
    assert config.server_context_tokens == 4096  # what the GGUF says it was trained for
    app = NewtApp(config, discover=no_local_server, local=local)
    try:
        async with app.run_test(size=(110, 40)) as pilot:
            screen = await chat_ready(pilot)
            await type_and_send(pilot, "hello there")
            await wait_idle(pilot, screen)
            assert "/3,276" in str(screen.query_one("#meter").render())  # 0.80 of 4,096
            await type_and_send(pilot, "/model")
            picker = await picker_ready(pilot)
            assert [(c.id, c.current) for c in picker.shown] == [
                ("small-4k", True),
                ("big-32k", False),
            ]
            await pilot.press(*"big")
            await pilot.pause()
            await pilot.press("enter")
            await wait_for(pilot, screen, "Now running big-32k")
            await wait_idle(pilot, screen)

            # the same port, another process with the new model and its window
            assert local.server.port == port and local.server.model_path == big
            args = cmdline(local)
            assert args != first_args and str(big) in args
            assert args[args.index("-c") + 1] == "8192"  # a chosen model's 8192, not 32k
            assert config.server_context_tokens == 8192
            assert "/6,553" in str(screen.query_one("#meter").render())
            assert app.session is not None and app.session.model == "Big-32k"

            await type_and_send(pilot, "and now?")  # the conversation goes on
            await wait_idle(pilot, screen)
            replies = [m.entry.text for m in screen.query(AssistantMessage)]
            assert replies == ["ok: hello there", "ok: and now?"]
            sent = httpx.get(f"{local.server.root_url}/__fake__/requests").json()
            chats = [r for r in sent if r["path"].endswith("/chat/completions")]
            assert chats[-1]["body"]["model"] == "Big-32k"
            texts = [m["content"] for m in chats[-1]["body"]["messages"] if m["role"] == "user"]
            assert any("hello there" in str(t) for t in texts)  # the history went with it

            await type_and_send(pilot, "/model qwen3-8b")  # in the catalogue, not downloaded
            await wait_for(pilot, screen, "Qwen3 8B is not downloaded yet")
            assert local.server.model_path == big and app.session.model == "Big-32k"
            await type_and_send(pilot, "/model small-4k")  # typed: the same step
            await wait_for(pilot, screen, "Now running small-4k")
            assert local.server.model_path == small and config.server_context_tokens == 4096
    finally:
        local.stop()
    remembered = load_config().backend
    assert remembered.local and remembered.local_model == str(small)


async def test_a_model_that_does_not_start_leaves_the_old_one_running(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_in = tmp_path / "llama-server"
    fake = FAKE_SERVER
    # the stand-in refuses the broken model, as llama-server exits on a bad file
    stand_in.write_text(
        f'#!/bin/sh\ncase "$*" in *Broken*) echo "failed to load model" >&2; exit 1;; esac\n'
        f'exec "{sys.executable}" "{fake}" "$@"\n'
    )
    stand_in.chmod(0o755)
    monkeypatch.setenv("NEWT_LLAMA_SERVER", str(stand_in))
    good = model_file(tmp_path / "m" / "Good.gguf", 4096)
    broken = model_file(tmp_path / "m" / "Broken.gguf", 4096)
    config = load_config()
    server = managed_server(good)
    await server.astart()
    local = ManagedLocal(server, config, known=lambda: [])
    try:
        from newt.backend.errors import LocalServerError

        with pytest.raises(LocalServerError, match="failed to load model"):
            await local.switch(KnownModel("broken", broken, "", str(broken)))
        assert local.server.model_path == good and local.server.port == server.port
        health = httpx.get(f"{local.server.root_url}/health")
        assert health.status_code == 200
    finally:
        local.stop()


def test_the_known_models_are_downloaded_ones_then_found_ones_then_smollm2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A catalogue download is also a file in the HF cache: listed once, by its name."""
    from newt.agent.local import managed_server as local_switch
    from newt.local.setup import SMOLLM_FILE
    from tests.support.local_machine import fake_machine

    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for var in ("HF_HUB_CACHE", "XDG_CACHE_HOME", "OLLAMA_MODELS"):
        monkeypatch.delenv(var, raising=False)
    paths = fake_machine(user, tmp_path)
    monkeypatch.setattr(
        local_switch, "cached_path", lambda m: paths["hf"] if m.name == "qwen3-4b" else None
    )
    monkeypatch.setenv("NEWT_LLAMA_CACHE", str(tmp_path / "llama"))
    smol = model_file(tmp_path / "llama" / SMOLLM_FILE, 8192)
    known = local_switch.known_local_models()
    assert [(k.name, k.path, k.remember) for k in known] == [
        ("qwen3-4b", paths["hf"], "qwen3-4b"),
        (
            "lmstudio-community/Llama-3.2-3B-Instruct-GGUF/Llama-3.2-3B-Instruct-Q4_K_M.gguf",
            paths["lmstudio"],
            str(paths["lmstudio"]),
        ),
        ("llama3.2:3b", paths["llama3.2"], str(paths["llama3.2"])),
        ("SmolLM2-135M-Instruct", smol, ""),
    ]
    # SmolLM2 runs with its small window, any other with what it was trained for (max 8192)
    assert managed_server(smol).ctx == 2048 and managed_server(paths["hf"]).ctx == 8192
