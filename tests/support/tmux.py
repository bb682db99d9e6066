"""The one tmux driver: the real `newt` (or any command) in a real terminal, one
tmux session on a private tmux server (its own socket).

Every test that drives tmux goes through `Terminal`; no other module under tests/
runs tmux (tests/unit/project/test_test_layout.py checks). `screenshot()` turns
what tmux shows (colours included) into an SVG through rich, so the README's
feature pictures are what a person sees in a terminal, not a render made inside
the app.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from newt.ui.screens.chat import STOP_KEYS as STOP_HINT
from tests.support.paths import REPO

NEWT = Path(sys.executable).parent / "newt"
# Under assets/ but not in it: assets/* ships in the wheel as newt.assets.
SCREENSHOTS = REPO / "assets" / "screenshots"


def have_tmux() -> bool:
    return shutil.which("tmux") is not None and NEWT.exists()


class Terminal:
    """A tmux session `newt` on its own socket, 120x36 unless told otherwise."""

    def __init__(self, width: int = 120, height: int = 36) -> None:
        self.socket = f"newt-test-{uuid.uuid4().hex[:8]}"
        self.width = width
        self.height = height

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False
        )

    def start(self, command: str, env: dict[str, str]) -> None:
        env_args = [arg for k, v in env.items() for arg in ("-e", f"{k}={v}")]
        started = self.tmux(
            "new-session",
            "-d",
            "-s",
            "newt",
            "-x",
            str(self.width),
            "-y",
            str(self.height),
            *env_args,
            command,
        )
        assert started.returncode == 0, started.stderr

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "newt", *keys)

    def type(self, text: str) -> None:
        """Literal text (no key-name lookup), as a person types it."""
        self.tmux("send-keys", "-t", "newt", "-l", text)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "newt").stdout

    def alive(self) -> bool:
        return self.tmux("has-session", "-t", "newt").returncode == 0

    def pane_pid(self) -> int:
        """The process the pane runs (newt itself when started with `exec`)."""
        return int(self.tmux("list-panes", "-t", "newt", "-F", "#{pane_pid}").stdout.split()[0])

    def wait_for(self, text: str, timeout: float = 20.0, exit_file: Path | None = None) -> str:
        """The screen once it shows `text`. With `exit_file` (where the command
        writes its exit status), fail at once if the command ended first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            if exit_file is not None and exit_file.exists():
                # the pane stays open on what newt printed last
                raise AssertionError(f"newt exited before {text!r} appeared:\n{screen}")
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared; screen:\n{self.screen()}")

    def wait_reply(self, text: str, timeout: float = 20.0) -> str:
        """The screen once the reply showing `text` has finished: the footer no
        longer offers to stop it. The turn is still storing itself after its
        last words, and a command sent meanwhile is refused ("waits until the
        reply finishes"), so a key pressed on the words alone may be lost."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen and STOP_HINT not in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"the reply {text!r} never finished; screen:\n{self.screen()}")

    def wait_gone(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                return
            time.sleep(0.1)
        raise AssertionError(f"newt did not exit; screen:\n{self.screen()}")

    def screenshot(self, name: str, title: str) -> Path:
        """Save the pane as `assets/screenshots/NAME.svg` if NEWT_SCREENSHOTS=1, else to /tmp.

        Returns the path written, so a test can assert the picture holds what it shows.
        """
        from rich.console import Console
        from rich.text import Text

        ansi = self.tmux("capture-pane", "-p", "-e", "-t", "newt").stdout
        console = Console(
            record=True, width=self.width, force_terminal=True, color_system="truecolor"
        )
        with open(os.devnull, "w") as sink:
            console.file = sink
            for line in ansi.splitlines():
                console.print(Text.from_ansi(line), no_wrap=True, crop=True)
        if os.environ.get("NEWT_SCREENSHOTS") == "1":
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            target = SCREENSHOTS / f"{name}.svg"
        else:
            target = Path(os.environ.get("TMPDIR", "/tmp")) / f"newt-shot-{self.socket}-{name}.svg"
        console.save_svg(str(target), title=title)
        return target

    def kill(self) -> None:
        self.tmux("kill-server")


@contextmanager
def terminal(width: int = 120, height: int = 36) -> Iterator[Terminal]:
    term = Terminal(width, height)
    try:
        yield term
    finally:
        term.kill()


def newt_env(home: Path) -> dict[str, str]:
    return {"NEWT_HOME": str(home), "TERM": "xterm-256color", "COLORTERM": "truecolor"}
