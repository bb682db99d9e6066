"""A reply cut at the length cap says so; /settings shows the cap in force."""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
from textual.widgets import Input

from newt.cli.main import _start_local
from newt.config import load_config
from newt.ui.app import NewtApp
from newt.ui.open_request import OpenRequest
from newt.ui.screens.settings import SettingsScreen
from newt.ui.widgets.messages import AssistantMessage
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.homes import config_for
from tests.support.paths import FAKE_SERVER
from tests.support.pilot import chat_ready, type_and_send, wait_idle
from tests.support.session_helpers import MODEL, newt_cmd


def _args(fake: FakeOpenAI, *extra: str) -> list[str]:
    return ["--base-url", fake.base_url, "--model", MODEL, *extra]


def test_print_mode_says_a_reply_stopped_at_the_length_limit(
    fake_openai: FakeOpenAI, _isolated_home: Path
) -> None:
    fake_openai.script(Reply(text="The first half of a long", finish_reason="length"))
    result = newt_cmd(*_args(fake_openai, "-p", "tell me everything"), home=_isolated_home)
    assert result.returncode == 1  # README: 1 when the reply was cut off
    assert result.stdout == "The first half of a long\n"
    assert "stopped at the length limit" in result.stderr and "Traceback" not in result.stderr

    fake_openai.script(Reply(text="cut again", finish_reason="length", completion_tokens=512))
    result = newt_cmd(*_args(fake_openai, "-c", "-p", "go on", "--json"), home=_isolated_home)
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["finish_reason"] == "length" and data["reply"] == "cut again"
    assert "(512 tokens)" in result.stderr

    fake_openai.script(Reply(text="A whole reply."))
    result = newt_cmd(*_args(fake_openai, "-c", "-p", "short one", "--json"), home=_isolated_home)
    assert result.returncode == 0 and result.stderr == ""
    assert json.loads(result.stdout)["finish_reason"] == "stop"


def _footer(view: AssistantMessage) -> str:
    return str(view.query_one(".reply-footer").render())


async def test_tui_footer_marks_a_reply_stopped_at_the_length_limit(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(
        Reply(text="Cut here", finish_reason="length", completion_tokens=512),
        Reply(text="Whole."),
    )
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(110, 34)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "long please")
        await wait_idle(pilot, screen)
        cut = list(screen.query(AssistantMessage))[-1]
        assert "stopped at the length limit" in _footer(cut)
        await type_and_send(pilot, "short please")
        await wait_idle(pilot, screen)
        whole = list(screen.query(AssistantMessage))[-1]
        assert "length limit" not in _footer(whole) and "completion tokens" in _footer(whole)
        await pilot.press("ctrl+q")
    # resumed, the footers say the same (the mark used to be live only)
    again = NewtApp(config_for(fake_openai), opening=OpenRequest(continue_latest=True))
    async with again.run_test(size=(110, 34)) as pilot:
        screen = await chat_ready(pilot)
        await wait_idle(pilot, screen)
        cut, whole = list(screen.query(AssistantMessage))[-2:]
        assert "stopped at the length limit" in _footer(cut)
        assert "length limit" not in _footer(whole)


async def _settings_hint(app: NewtApp, field: str = "max-tokens") -> str:
    async with app.run_test(size=(110, 34)) as pilot:
        await chat_ready(pilot)
        await type_and_send(pilot, "/settings")
        await pilot.pause()
        settings: Any = app.screen
        assert isinstance(settings, SettingsScreen)
        return str(settings.query_one(f"#settings-{field}", Input).placeholder)


async def test_settings_show_the_context_window(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    """With [memory] context_tokens in the config file, /settings says the
    window, where it comes from, what newt fills of it, and where to change it."""
    app = NewtApp(config_for(fake_openai, context_tokens=2048))
    async with app.run_test(size=(110, 34)) as pilot:
        await chat_ready(pilot)
        await type_and_send(pilot, "/settings")
        await pilot.pause()
        assert isinstance(app.screen, SettingsScreen)
        line = str(app.screen.query_one("#settings-window").render())
        assert "Context window 2,048 tokens" in line
        assert "explicit config ([memory] context_tokens)" in line
        assert "newt fills 1,638 before it folds" in line


async def test_settings_show_the_managed_servers_reply_cap(
    home: Path,
    fake_openai: FakeOpenAI,
    tmp_path: Path,
    monkeypatch: Any,
) -> None:
    # the cap really in force: the one newt gave the llama-server it runs itself
    fake = FAKE_SERVER
    binary = tmp_path / "llama-server"
    binary.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{fake}" "$@"\n')
    binary.chmod(0o755)
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setenv("NEWT_LLAMA_SERVER", str(binary))
    monkeypatch.setenv("NEWT_LLAMA_CACHE", str(tmp_path / "cache"))
    with ExitStack() as stack:
        config = load_config()
        _start_local(stack, config, str(model), explicit_model=None)
        # a chosen model runs with an 8192 window, so its cap is 1024
        assert (config.server_reply_cap, config.server_context_tokens) == (1024, 8192)
        assert await _settings_hint(NewtApp(config)) == "empty: capped at 1024"
    # a server newt did not start: its cap is unknown, not "no cap"
    assert await _settings_hint(NewtApp(config_for(fake_openai))) == "empty: server default"


async def test_the_managed_server_samples_as_the_models_publisher_ships_it(
    home: Path,
    fake_openai: FakeOpenAI,
    tmp_path: Path,
    monkeypatch: Any,
) -> None:
    """A catalogue model runs with its publisher's sampling as the server's
    defaults (newt's requests set none), and /settings says what an empty field
    means; a file the catalogue does not know keeps the server's own."""
    binary = tmp_path / "llama-server"
    binary.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_SERVER}" "$@"\n')
    binary.chmod(0o755)
    coder = tmp_path / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"  # the catalogue's file name
    other = tmp_path / "tiny.gguf"
    for model in (coder, other):
        model.write_bytes(b"GGUF")
    monkeypatch.setenv("NEWT_LLAMA_SERVER", str(binary))
    monkeypatch.setenv("NEWT_LLAMA_CACHE", str(tmp_path / "cache"))
    with ExitStack() as stack:
        config = load_config()
        local = _start_local(stack, config, str(coder), explicit_model=None)
        assert local.server.process is not None
        args = Path(f"/proc/{local.server.process.pid}/cmdline").read_bytes().split(b"\0")
        flags = [a.decode() for a in args[args.index(b"--temp") :][:8]]
        assert flags == [
            "--temp", "0.7", "--top-p", "0.8", "--top-k", "20", "--repeat-penalty", "1.1",
        ]  # fmt: skip
        assert config.server_sampling == {
            "temperature": 0.7, "top_p": 0.8, "top_k": 20, "repeat_penalty": 1.1,
        }  # fmt: skip
        app = NewtApp(config)
        async with app.run_test(size=(110, 34)) as pilot:
            screen = await chat_ready(pilot)
            await type_and_send(pilot, "hello")
            await wait_idle(pilot, screen)
        sent = httpx.get(f"{local.server.root_url}/__fake__/requests").json()
        body = [r for r in sent if r["path"].endswith("/chat/completions")][-1]["body"]
        assert not {"temperature", "top_p", "top_k"} & set(body)  # left to the server
        assert await _settings_hint(NewtApp(config), "temperature") == "empty: model's 0.7"
        assert await _settings_hint(NewtApp(config), "top-p") == "empty: model's 0.8"
    with ExitStack() as stack:
        config = load_config()
        local = _start_local(stack, config, str(other), explicit_model=None)
        assert local.server.process is not None
        args = Path(f"/proc/{local.server.process.pid}/cmdline").read_bytes().split(b"\0")
        assert b"--temp" not in args and config.server_sampling == {}
        assert await _settings_hint(NewtApp(config), "temperature") == "0-2, empty: default"
