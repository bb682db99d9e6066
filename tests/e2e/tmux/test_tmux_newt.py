"""The real `newt` command in a real terminal (tmux) against the standalone fake server.

Type a message, see the streamed reply, open /memory, quit, reopen with -c
and see the history: the whole path a user takes, asserted on capture-pane.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import fake_process
from tests.support.tmux import NEWT, Terminal, have_tmux

REPLY = "Lakes freeze from the top down."

pytestmark = pytest.mark.skipif(not have_tmux(), reason="needs tmux and an installed newt")


@pytest.fixture
def fake_server() -> Iterator[str]:
    with fake_process.fake_server("--reply-text", REPLY) as base_url:
        yield base_url


def test_chat_memory_quit_and_continue(tmp_path: Path, fake_server: str) -> None:
    env = {"NEWT_HOME": str(tmp_path / "home"), "TERM": "xterm-256color", "COLORTERM": ""}
    exit_file = tmp_path / "exit"
    base = f"{NEWT} --base-url {fake_server} --model fake-model"
    tmux = Terminal()
    try:
        tmux.start(f"cd {tmp_path} && {base}; echo $? > {exit_file}", env)
        tmux.wait_for("Enter sends")
        tmux.keys("how do lakes freeze?")
        tmux.keys("Enter")
        tmux.wait_for(REPLY)
        tmux.keys("C-g")
        panel = tmux.wait_for("resident of")  # "Memory" alone is also in the footer
        assert "budget" in panel and "last reported" in panel
        time.sleep(0.2)
        tmux.keys("Escape")
        time.sleep(0.3)  # let the terminal's escape delay pass before the next key
        tmux.keys("C-q")
        tmux.wait_gone()
        assert exit_file.read_text().strip() == "0"

        tmux = Terminal()
        tmux.start(f"cd {tmp_path} && {base} -c; echo $? > {exit_file}", env)
        screen = tmux.wait_for(REPLY)
        assert "how do lakes freeze?" in screen
        tmux.keys("C-q")
        tmux.wait_gone()
    finally:
        tmux.kill()
