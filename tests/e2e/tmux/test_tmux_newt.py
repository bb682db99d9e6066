"""The real `newt` command in a real terminal (tmux) against the standalone fake server.

Type a message, see the streamed reply, open /memory, quit, reopen with -c
and see the history: the whole path a user takes, asserted on capture-pane.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.paths import REPO

ROOT = REPO
NEWT = Path(sys.executable).parent / "newt"
REPLY = "Lakes freeze from the top down."

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None or not NEWT.exists(), reason="needs tmux and an installed newt"
)


@pytest.fixture
def fake_server() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fake_openai", "--port", "0", "--reply-text", REPLY],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on" in line, line
        yield line.split("listening on", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class Tmux:
    def __init__(self, env: dict[str, str]) -> None:
        self.name = f"newt-test-{uuid.uuid4().hex[:8]}"
        self.env = env

    def start(self, command: str) -> None:
        env_args = [arg for k, v in self.env.items() for arg in ("-e", f"{k}={v}")]
        subprocess.run(
            [
                "tmux",
                "new-session",
                "-d",
                "-s",
                self.name,
                "-x",
                "120",
                "-y",
                "36",
                *env_args,
                command,
            ],
            check=True,
        )

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def screen(self) -> str:
        result = subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True
        )
        return result.stdout

    def alive(self) -> bool:
        return (
            subprocess.run(["tmux", "has-session", "-t", self.name], capture_output=True).returncode
            == 0
        )

    def wait_for(self, text: str, timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared; screen:\n{self.screen()}")

    def wait_gone(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                return
            time.sleep(0.1)
        raise AssertionError(f"newt did not exit; screen:\n{self.screen()}")

    def kill(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def test_chat_memory_quit_and_continue(tmp_path: Path, fake_server: str) -> None:
    env = {"NEWT_HOME": str(tmp_path / "home"), "TERM": "xterm-256color", "COLORTERM": ""}
    exit_file = tmp_path / "exit"
    base = f"{NEWT} --base-url {fake_server} --model fake-model"
    tmux = Tmux(env)
    try:
        tmux.start(f"cd {tmp_path} && {base}; echo $? > {exit_file}")
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

        tmux = Tmux(env)
        tmux.start(f"cd {tmp_path} && {base} -c; echo $? > {exit_file}")
        screen = tmux.wait_for(REPLY)
        assert "how do lakes freeze?" in screen
        tmux.keys("C-q")
        tmux.wait_gone()
    finally:
        tmux.kill()
