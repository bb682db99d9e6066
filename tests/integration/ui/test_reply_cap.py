"""A reply cut at the length cap says so; /settings shows the cap in force."""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

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


async def _settings_hint(app: NewtApp) -> str:
    async with app.run_test(size=(110, 34)) as pilot:
        await chat_ready(pilot)
        await type_and_send(pilot, "/settings")
        await pilot.pause()
        settings: Any = app.screen
        assert isinstance(settings, SettingsScreen)
        return str(settings.query_one("#settings-max-tokens", Input).placeholder)


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
        assert await _settings_hint(NewtApp(config)) == "empty: server caps at 1024"
    # a server newt did not start: its cap is unknown, not "no cap"
    assert await _settings_hint(NewtApp(config_for(fake_openai))) == "empty: server default"
