"""The /model picker, /settings and /preset in the real app (real ChatSession,
real SQLite store) against the fake OpenAI server, driven with Pilot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import Input, OptionList, Static, TextArea

from newt.chat_settings import ChatSettings
from newt.config import Config, load_config
from newt.ui.app import NewtApp
from newt.ui.open_request import OpenRequest
from newt.ui.screens.choice_picker import ChoicePickerScreen
from newt.ui.screens.settings import SettingsScreen
from tests.support.fake_openai import FakeOpenAI
from tests.support.pilot import chat_ready, notices, picker_ready, type_and_send, wait_idle

PRESETS = """
[presets.terse]
system_prompt = "Answer in one sentence."
temperature = 0.2

[presets.creative]
temperature = 1.3
top_p = 0.9
"""


def config_for(server: FakeOpenAI, config_text: str = "") -> Config:
    if config_text:
        import os

        (Path(os.environ["NEWT_HOME"]) / "config.toml").write_text(config_text)
    config = load_config(base_url=server.base_url, model="fake-model")
    config.backend.max_retries = 0
    return config


def serve_three_models(fake: FakeOpenAI) -> None:
    """No /props: the probe reads each model's window from vLLM's max_model_len."""
    fake.n_ctx = None
    fake.models = [
        {"id": "fake-model", "object": "model", "max_model_len": 4096},
        {"id": "qwen3-8b-instruct", "object": "model", "max_model_len": 32768},
        {"id": "llama-3.2-1b", "object": "model", "max_model_len": 8192},
    ]


async def test_model_picker_filters_and_switches(
    _isolated_home: Path, fake_openai: FakeOpenAI
) -> None:
    serve_three_models(fake_openai)
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(110, 34)) as pilot:
        screen = await chat_ready(pilot)
        await app.session.probed()  # type: ignore[union-attr]  # the probe runs after the first paint
        assert app.session.memory_status().context_tokens == 4096  # type: ignore[union-attr]
        await type_and_send(pilot, "/model")
        picker = await picker_ready(pilot)
        assert [c.id for c in picker.shown] == ["fake-model", "llama-3.2-1b", "qwen3-8b-instruct"]
        assert [c.current for c in picker.shown] == [True, False, False]
        assert picker.shown[2].detail == "context 32.8k"
        options = picker.query_one(OptionList)
        assert options.highlighted == 0  # the current model
        for key in "qwen":
            await pilot.press(key)
        await pilot.pause()
        assert [c.id for c in picker.shown] == ["qwen3-8b-instruct"]
        await pilot.press("backspace", "backspace", "backspace", "backspace")
        await pilot.press("l", "l", "a", "m", "a")
        await pilot.pause()
        assert [c.id for c in picker.shown] == ["llama-3.2-1b"]
        await pilot.press("backspace", "backspace", "backspace", "backspace", "backspace")
        await pilot.pause()
        await pilot.press("down", "down")
        await pilot.press("enter")
        await wait_idle(pilot, screen)
        session: Any = app.session
        assert session.model == "qwen3-8b-instruct"
        assert screen.sub_title == "qwen3-8b-instruct"
        status = session.memory_status()  # the budget was re-resolved for the new model
        assert (status.context_tokens, status.budget_source) == (32768, "backend")
        assert notices(screen)[-1] == (
            "Model set to qwen3-8b-instruct. Memory budget 26.2k tokens "
            "of a 32.8k-token window (backend)."
        )
        await type_and_send(pilot, "hello")
        await wait_idle(pilot, screen)
        assert fake_openai.chat_requests[-1].body["model"] == "qwen3-8b-instruct"
        # the key opens it too, and Esc closes it without a change
        await pilot.press("f2")
        picker = await picker_ready(pilot)
        assert [c.current for c in picker.shown] == [False, False, True]
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen and session.model == "qwen3-8b-instruct"


async def test_model_picker_falls_back_to_a_typed_name(
    _isolated_home: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.models_status = 404
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(110, 34)) as pilot:
        screen = await chat_ready(pilot)
        await pilot.press("f2")
        picker = await picker_ready(pilot)
        assert picker.unavailable is not None
        status = str(picker.query_one("#picker-status", Static).render())
        assert "does not list its models" in status
        assert "Type a model name and press Enter." in status
        assert not picker.query_one(OptionList).display
        await pilot.press(*"my-model")
        await pilot.press("enter")
        await wait_idle(pilot, screen)
        assert app.session.model == "my-model"  # type: ignore[union-attr]


async def test_settings_screen_edits_saves_and_restores(
    _isolated_home: Path, fake_openai: FakeOpenAI
) -> None:
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(110, 34)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "first")
        await wait_idle(pilot, screen)
        used_before = app.session.memory_status().used  # type: ignore[union-attr]
        await type_and_send(pilot, "/settings")
        await pilot.pause()
        settings = app.screen
        assert isinstance(settings, SettingsScreen)
        assert settings.query_one("#settings-system", TextArea).has_focus
        await pilot.press(*"Reply like a ship's captain, with long nautical words.")
        temperature = settings.query_one("#settings-temperature", Input)
        temperature.value = "9"
        await pilot.press("ctrl+s")
        await pilot.pause()
        error = str(settings.query_one("#settings-error", Static).render())
        assert error == "temperature must be between 0 and 2, not 9.0"
        assert app.screen is settings  # refused, and what was typed is still there
        temperature.value = "0.4"
        settings.query_one("#settings-max-tokens", Input).value = "300"
        await pilot.press("ctrl+s")
        await wait_idle(pilot, screen)
        session: Any = app.session
        assert session.settings_controls.settings == ChatSettings(
            "Reply like a ship's captain, with long nautical words.", 0.4, None, 300
        )
        # re-anchored: this prompt is shorter than newt's persona line it replaces
        assert session.memory_status().used < used_before
        assert notices(screen)[-1].startswith("Settings saved: own system prompt (54 chars)")
        await type_and_send(pilot, "second")
        await wait_idle(pilot, screen)
        sent = fake_openai.chat_requests[-1].body
        assert (sent["temperature"], sent["max_tokens"]) == (0.4, 300)
        assert sent["messages"][0]["content"].startswith("Reply like a ship's captain")
        await pilot.press("ctrl+q")

    app = NewtApp(config_for(fake_openai), opening=OpenRequest(continue_latest=True))
    async with app.run_test(size=(110, 34)) as pilot:
        screen = await chat_ready(pilot)
        await wait_idle(pilot, screen)
        await pilot.press("f3")
        await pilot.pause()
        restored = app.screen
        assert isinstance(restored, SettingsScreen)
        assert restored.query_one("#settings-system", TextArea).text.startswith("Reply like")
        assert restored.query_one("#settings-temperature", Input).value == "0.4"
        assert restored.query_one("#settings-top-p", Input).value == ""
        assert restored.query_one("#settings-max-tokens", Input).value == "300"
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen


async def test_preset_picker_and_unknown_preset(
    _isolated_home: Path, fake_openai: FakeOpenAI
) -> None:
    app = NewtApp(config_for(fake_openai, PRESETS))
    async with app.run_test(size=(110, 34)) as pilot:
        screen = await chat_ready(pilot)
        session: Any = app.session
        await type_and_send(pilot, "/preset nope")
        await wait_idle(pilot, screen)
        assert notices(screen)[-1] == "no preset named 'nope'; known presets: creative, terse"
        await type_and_send(pilot, "/preset")
        picker = await picker_ready(pilot)
        assert [c.id for c in picker.shown] == ["creative", "terse"]
        await pilot.press("t", "e", "r")
        await pilot.press("enter")
        await wait_idle(pilot, screen)
        assert session.settings_controls.settings == ChatSettings(
            "Answer in one sentence.", 0.2, preset="terse"
        )
        assert notices(screen)[-1] == (
            "Preset terse applied: own system prompt (23 chars), temperature 0.2."
        )


async def test_palette_opens_the_settings_and_the_model_picker(
    _isolated_home: Path, fake_openai: FakeOpenAI
) -> None:
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(110, 34)) as pilot:
        screen = await chat_ready(pilot)
        for query, kind in (("settings", SettingsScreen), ("/model", ChoicePickerScreen)):
            await pilot.press("ctrl+p")
            await pilot.pause()
            await pilot.press(*query)
            await pilot.pause(0.3)
            await pilot.press("enter")
            await pilot.pause(0.2)
            assert isinstance(app.screen, kind), app.screen
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is screen


async def test_a_slow_model_list_never_blocks_the_screen(
    _isolated_home: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.models_delay_s = 30  # the listing hangs; the picker must not
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(110, 34)) as pilot:
        screen = await chat_ready(pilot)
        await pilot.press("f2")
        await pilot.pause(0.2)
        picker = app.screen
        assert isinstance(picker, ChoicePickerScreen) and not picker.loaded
        assert str(picker.query_one("#picker-status", Static).render()) == "Loading…"
        await pilot.press(*"typed-name")  # keys are handled while the list loads
        await pilot.pause()
        assert picker.query_one(Input).value == "typed-name"
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        await type_and_send(pilot, "still here")
        await wait_idle(pilot, screen)
        assert fake_openai.chat_requests[-1].body["messages"][-1]["content"] == "still here"
