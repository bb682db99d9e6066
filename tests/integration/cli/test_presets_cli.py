"""`newt --preset NAME` in print mode: a real subprocess, the fake server and a real
config file; the request body is checked where it arrives."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.session_helpers import newt_cmd

CONFIG = """
[backend]
model = "fake-model"

[presets.reviewer]
system_prompt = "You review code. Point out bugs first."
temperature = 0.1
top_p = 0.95
max_tokens = 200
model = "coder-7b"

[presets.warm]
temperature = 1.2
"""


def write_config(home: Path, text: str = CONFIG) -> None:
    (home / "config.toml").write_text(text)


def test_print_mode_sends_the_preset(fake_openai: FakeOpenAI, _isolated_home: Path) -> None:
    write_config(_isolated_home)
    fake_openai.script(Reply(text="Line 3 divides by zero."))
    result = newt_cmd(
        "--base-url", fake_openai.base_url, "--preset", "reviewer", "-p", "look at this",
        home=_isolated_home,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Line 3 divides by zero.\n"
    sent = fake_openai.chat_requests[-1].body
    assert sent["model"] == "coder-7b"  # the preset's model wins over the config's
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"]) == (0.1, 0.95, 200)
    assert sent["messages"][0]["content"].startswith("You review code. Point out bugs first.\n")

    # the conversation keeps its settings: -c without --preset sends them again
    result = newt_cmd("--base-url", fake_openai.base_url, "--model", "coder-7b", "-c", "-p",
                      "and now?", home=_isolated_home)  # fmt: skip
    assert result.returncode == 0, result.stderr
    again = fake_openai.chat_requests[-1].body
    assert (again["temperature"], again["top_p"], again["max_tokens"]) == (0.1, 0.95, 200)
    assert again["messages"][0]["content"].startswith("You review code.")


def test_an_explicit_model_wins_over_the_preset(
    fake_openai: FakeOpenAI, _isolated_home: Path
) -> None:
    write_config(_isolated_home)
    result = newt_cmd("--base-url", fake_openai.base_url, "--model", "mine", "--preset",
                      "reviewer", "-p", "hi", "--json", home=_isolated_home)  # fmt: skip
    assert result.returncode == 0, result.stderr
    sent = fake_openai.chat_requests[-1].body
    assert sent["model"] == "mine" and sent["temperature"] == 0.1
    assert json.loads(result.stdout)["reply"] == "ok: hi"


def test_unknown_preset_lists_the_known_ones(fake_openai: FakeOpenAI, _isolated_home: Path) -> None:
    write_config(_isolated_home)
    result = newt_cmd("--base-url", fake_openai.base_url, "--preset", "reviwer", "-p", "hi",
                      home=_isolated_home)  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == (
        "newt: error: no preset named 'reviwer'; known presets: reviewer, warm\n"
    )
    assert fake_openai.chat_requests == []  # nothing sent, nothing stored
    assert not (_isolated_home / "newt.db").exists()


def test_a_broken_preset_table_is_a_config_error(
    fake_openai: FakeOpenAI, _isolated_home: Path
) -> None:
    write_config(_isolated_home, CONFIG.replace("top_p = 0.95", "top_p = 'high'"))
    result = newt_cmd("--base-url", fake_openai.base_url, "-p", "hi", home=_isolated_home)
    assert result.returncode == 2
    path = _isolated_home / "config.toml"
    assert result.stderr == (
        f"newt: error: {path}, line 8: presets.reviewer.top_p: top_p must be a number, not 'high'\n"
    )
