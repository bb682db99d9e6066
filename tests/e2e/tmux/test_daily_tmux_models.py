"""The model picker and the settings screen in a real terminal (tmux), against the
standalone fake server: the real `newt` command, asserted on capture-pane, with
the README's pictures (assets/model-picker.svg, assets/settings.svg) taken from
what tmux shows (NEWT_SCREENSHOTS=1 writes them)."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.fake_process import fake_server
from tests.support.tmux import NEWT, have_tmux, newt_env, terminal

pytestmark = pytest.mark.skipif(not have_tmux(), reason="needs tmux and an installed newt")

MODELS = "fake-model=4096,qwen3-8b-instruct=32768,llama-3.2-1b-instruct=8192,gemma-3-270m=2048"
PROMPT = "You are a ship's navigator. Answer with bearings and distances."


def requests_seen(base_url: str) -> list[dict]:
    root = base_url.removesuffix("/v1")
    with urllib.request.urlopen(f"{root}/__fake__/requests", timeout=5) as response:
        return [r for r in json.load(response) if r["path"].endswith("/chat/completions")]


def test_model_picker_and_settings_in_a_terminal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with fake_server("--models", MODELS) as url, terminal(120, 34) as term:
        term.start(f"{NEWT} --base-url {url} --model fake-model", newt_env(home))
        term.wait_for("Message newt")
        term.type("hello")
        term.keys("Enter")
        term.wait_reply("ok: hello")

        # /model lists what the server serves, with each window; typing filters
        term.type("/model")
        term.keys("Enter")
        screen = term.wait_for("qwen3-8b-instruct")
        assert "Models at" in screen and "context 32.8k · Q4_K_M" in screen
        assert "● fake-model" in screen  # the current one
        assert "4 of 4 models" in screen
        term.type("instruct")
        screen = term.wait_for("2 of 4 models")  # llama-3.2-1b-instruct, qwen3-8b-instruct
        assert "gemma-3-270m" not in screen
        term.screenshot("model-picker", "newt: /model lists what the backend serves")
        term.keys(*["BSpace"] * 8)
        # a person sees the filter clear before typing the next one; keys and
        # text sent back to back can reach the app in one read, out of order
        term.wait_for("4 of 4 models")
        term.type("llama")
        screen = term.wait_for("1 of 4 models")
        assert "qwen3-8b-instruct" not in screen
        term.keys("Enter")
        term.wait_for("Model set to llama-3.2-1b-instruct.")

        # F3: this conversation's settings
        term.keys("F3")
        term.wait_for("Conversation settings")
        # a pause between typing and Tab, as a person makes one: text and a key
        # arriving in one read reach the app as a paste
        for text, keys in ((PROMPT, ("Tab",)), ("0.4", ("Tab", "Tab")), ("300", ())):
            term.type(text)
            time.sleep(0.4)
            for key in keys:
                term.keys(key)
                time.sleep(0.2)
        screen = term.wait_for("300")
        assert "Temperature" in screen and "Max reply tokens" in screen
        term.screenshot("settings", "newt: /settings for this conversation")
        term.keys("C-s")
        term.wait_for("Settings saved: own system prompt")
        term.type("where are we?")
        term.keys("Enter")
        term.wait_reply("ok: where are we?")
        term.keys("C-q")
        term.wait_gone()

        sent = requests_seen(url)[-1]["body"]
        assert sent["model"] == "llama-3.2-1b-instruct"
        assert (sent["temperature"], sent["max_tokens"]) == (0.4, 300)
        assert "top_p" not in sent
        assert sent["messages"][0]["content"].startswith(PROMPT)
