"""`/copy` inside tmux as tmux ships it.

Under tmux's default `set-clipboard external` the OSC 52 newt writes is
dropped, so newt used to say "Copied the last reply." with nothing copied.
The real `newt` in a real tmux (default options), against the fake server.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.support.fake_process import fake_server
from tests.support.tmux import NEWT, Terminal, newt_env, terminal

REPLY = "Lisbon leaves from gate E33."


def buffer(term: Terminal) -> str:
    return term.tmux("show-buffer").stdout


def toast(screen: str) -> str:
    """The notification's words, its wrapped lines joined."""
    parts = [line.rsplit("▌", 1)[1].rstrip(" ╮│╯") for line in screen.splitlines() if "▌" in line]
    return " ".join(" ".join(parts).split())


def copy_once(term: Terminal, tmp_path: Path, base_url: str) -> str:
    env = newt_env(tmp_path / "home")
    term.start(f"cd {tmp_path} && {NEWT} --base-url {base_url} --model fake-model", env)
    term.wait_for("Enter sends")
    term.type("Which gate?")
    term.keys("Enter")
    term.wait_reply(REPLY)
    time.sleep(0.5)
    term.type("/copy")
    term.keys("Enter")
    return term.wait_for("paste buffer")


def test_copy_under_the_default_set_clipboard_lands_in_tmux_and_says_where(
    tmp_path: Path,
) -> None:
    with fake_server("--reply-text", REPLY) as base_url, terminal(100, 24) as term:
        screen = copy_once(term, tmp_path, base_url)
        assert term.tmux("show-options", "-sv", "set-clipboard").stdout.strip() == "external"
        said = toast(screen)
        assert "Copied the last reply (1 line) to tmux's paste buffer" in said
        assert "passes it on to your terminal's clipboard if the terminal accepts" in said
        assert buffer(term) == REPLY
        term.keys("C-q")


def test_copy_with_set_clipboard_off_says_the_clipboard_was_not_set(tmp_path: Path) -> None:
    with fake_server("--reply-text", REPLY) as base_url, terminal(100, 24) as term:
        term.tmux("new-session", "-d", "-s", "keep", "sleep 60")  # the server, before newt
        term.tmux("set-option", "-s", "set-clipboard", "off")
        screen = copy_once(term, tmp_path, base_url)
        said = toast(screen)
        assert "to tmux's paste buffer only" in said
        assert "set-clipboard is off, so the system clipboard was not set" in said
        assert buffer(term) == REPLY
        term.keys("C-q")
