"""Thinking, copy and the token footer in a real terminal (tmux) against the fake server.

The copy goes the whole real way: newt writes OSC 52, and tmux with
`set-clipboard on` stores it as its paste buffer, which `show-buffer` reads.
Screenshots for the README: NEWT_SCREENSHOTS=1 writes assets/screenshots/
thinking.svg, copy.svg and token-counts.svg.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.support.fake_process import fake_server
from tests.support.tmux import NEWT, Terminal, have_tmux, newt_env, terminal

pytestmark = pytest.mark.skipif(not have_tmux(), reason="needs tmux and an installed newt")

THOUGHT = [
    "The user asks how lakes freeze.",
    "Water is densest at 4 °C, so colder water stays on top.",
    "So the surface freezes first; answer briefly.",
]
ANSWER = "Lakes freeze from the **top down**: water is densest at 4 °C."
CODE = "import math\nprint(math.tau)"
SECOND = f"Here it is:\n\n```python\n{CODE}\n```\n\nRun it with `python`."


def script(tmp_path: Path) -> Path:
    tagged = "<think>\n" + "\n".join(THOUGHT) + "\n</think>\n\n" + ANSWER
    replies = [
        # the <think> form, streamed slowly enough to watch
        {
            "text": tagged,
            "chunk_size": 7,
            "delay_s": 0.03,
            "prompt_tokens": 412,
            "completion_tokens": 96,
        },
        # the reasoning_content form
        {
            "text": SECOND,
            "reasoning": "They want code. A short Python snippet will do.",
            "prompt_tokens": 530,
            "completion_tokens": 41,
            "chunk_size": 5,
            "delay_s": 0.02,
        },
    ]
    path = tmp_path / "script.json"
    path.write_text(json.dumps(replies))
    return path


def buffer(term: Terminal) -> str:
    return term.tmux("show-buffer").stdout


def wait_buffer(term: Terminal, text: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if buffer(term) == text:
            return text
        time.sleep(0.1)
    raise AssertionError(f"tmux buffer is {buffer(term)!r}, not {text!r}")


def wait_idle(term: Terminal, timeout: float = 10.0) -> str:
    """The reply is done: its status line no longer offers to stop it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        screen = term.screen()
        if "Esc or ctrl+c stops the reply" not in screen:
            return screen
        time.sleep(0.1)
    raise AssertionError(f"the reply never finished; screen:\n{term.screen()}")


def test_thinking_copy_and_token_counts(tmp_path: Path) -> None:
    with (
        fake_server("--script", str(script(tmp_path))) as base_url,
        terminal(100, 24) as term,
    ):
        env = newt_env(tmp_path / "home")
        term.start(f"cd {tmp_path} && {NEWT} --base-url {base_url} --model fake-model", env)
        # tmux keeps what an application copies with OSC 52 as a paste buffer
        term.tmux("set-option", "-g", "set-clipboard", "on")
        term.wait_for("Enter sends")

        term.type("How do lakes freeze?")
        term.keys("Enter")
        screen = term.wait_for("top down")
        term.wait_for("tok/s")
        screen = wait_idle(term)
        assert "▸ thinking · 3 lines · ctrl+t unfolds" in screen
        assert THOUGHT[1] not in screen  # folded
        assert "<think>" not in screen
        assert "412 prompt · 96 completion tokens · " in screen

        term.keys("C-t")
        screen = term.wait_for(THOUGHT[1])
        assert "▾ thinking · 3 lines · ctrl+t folds" in screen
        assert all(line in screen for line in THOUGHT)
        shot = term.screenshot("thinking", "newt: the model's thinking, unfolded with ctrl+t")
        assert "ctrl+t" in shot.read_text()
        term.keys("C-t")
        term.wait_for("▸ thinking · 3 lines")

        term.type("Show me tau in Python")
        term.keys("Enter")
        term.wait_for("530 prompt · 41 completion tokens")
        screen = wait_idle(term)
        assert "▸ thinking · 1 line" in screen
        shot = term.screenshot(
            "token-counts", "newt: prompt and completion tokens and speed under each reply"
        )
        assert "530" in shot.read_text()

        # /copy code 1: the code block alone, through OSC 52 into tmux's buffer
        term.type("/copy code 1")
        term.keys("Enter")
        term.wait_for("Copied code block 1 of the last reply")
        wait_buffer(term, CODE)
        shot = term.screenshot("copy", "newt: /copy code 1 puts the code block on the clipboard")
        assert "Copied" in shot.read_text()

        # a key on a focused message: shift+tab reaches the newest reply, up the question
        time.sleep(3.5)  # let the notification go
        term.keys("BTab")
        time.sleep(0.3)
        term.keys("c")
        wait_buffer(term, SECOND)
        term.keys("Up")
        time.sleep(0.3)
        term.keys("c")
        wait_buffer(term, "Show me tau in Python")

        term.keys("C-q")
        term.wait_gone()
