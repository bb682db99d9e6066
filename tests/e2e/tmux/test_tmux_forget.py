"""Forgetting with the real `newt` in tmux: chat a unique string,
find it in the memory view and forget it, delete a conversation from the
resume picker; the screen says so, and afterwards neither string is in any
byte of newt.db, its -wal or its -shm.

Against the standalone fake server (it echoes "ok: <message>", so the reply
holds the string too). With NEWT_SCREENSHOTS=1 it writes
assets/screenshots/memory-view.svg and picker-delete.svg.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.support.fake_process import fake_server
from tests.support.received import last_sent
from tests.support.tmux import NEWT, Terminal, have_tmux, newt_env, terminal

pytestmark = pytest.mark.skipif(not have_tmux(), reason="needs tmux and an installed newt")

LOCKER = "QUIXOTICPLUM77"
TRIP = "VELVETMARMOT42"


def in_files(home: Path, text: str) -> list[str]:
    """Which of newt.db, -wal, -shm hold `text` (any case)."""
    needle = text.lower().encode()
    found = []
    for suffix in ("", "-wal", "-shm"):
        path = home / f"newt.db{suffix}"
        if path.exists() and needle in path.read_bytes().lower():
            found.append(path.name)
    return found


def press(term: Terminal, key: str) -> None:
    """A key that moves the focus (the arrows into a list), then a pause: keys
    sent at once all go to the widget that had the focus when they arrived."""
    term.keys(key)
    time.sleep(0.4)


def wait_gone(term: Terminal, text: str, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    while text in (screen := term.screen()):
        assert time.monotonic() < deadline, screen
        time.sleep(0.2)
    return screen


def test_forget_and_delete_leave_no_byte_behind(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with fake_server() as url, terminal(120, 40) as term:
        # COLUMNS and LINES as the pane: under pytest the pane inherits 80x24 ones,
        # which newt (shutil.get_terminal_size) would take over the real size
        env = {**newt_env(home), "COLUMNS": "120", "LINES": "40"}
        term.start(f"cd {tmp_path} && exec {NEWT} --base-url {url} --model fake-model", env)
        term.wait_for("Enter sends")
        term.type(f"My locker code is {LOCKER}, remember it.")
        term.keys("Enter")
        term.wait_reply(f"ok: My locker code is {LOCKER}")
        assert in_files(home, LOCKER), "the string never reached the database: proves nothing"

        # the memory view: the message and the reply hold it; F forgets both
        term.type(f"/memory search {LOCKER}")
        term.keys("Enter")
        time.sleep(3)
        screen = term.wait_for("forgets everything")
        term.wait_for(f"for “{LOCKER}”")
        screen = term.screen()
        assert "message ·" in screen and "reply ·" in screen
        term.screenshot("memory-view", "newt: /memory search finds a record; f or F forgets it")
        press(term, "Down")
        term.type("F")
        screen = term.wait_for(f"Forget 2 records holding “{LOCKER}”? y/n")
        term.type("y")
        screen = term.wait_for("forgot 2 messages, 2 memory records")
        term.wait_for(f"Nothing in memory matches “{LOCKER}”")
        term.keys("Escape")
        screen = term.wait_for("[forgotten]")
        assert LOCKER not in screen  # the log is drawn again from the session

        # a second conversation, deleted from the picker while it is open
        term.type("/new")
        term.keys("Enter")
        term.wait_for("New conversation.")
        term.type(f"Plan the trip to {TRIP} please.")
        term.keys("Enter")
        term.wait_reply(f"ok: Plan the trip to {TRIP}")
        term.keys("C-o")
        term.wait_for("r renames · d deletes")
        term.wait_for("2 conversations")
        press(term, "Down")  # to the list (the older one), then up to the open one
        press(term, "Up")
        term.type("d")
        screen = term.wait_for(f"Delete “Plan the trip to {TRIP}")
        assert "y/n" in screen and "its 2 messages and the memory" in screen
        term.screenshot("picker-delete", "newt: d in /resume deletes a conversation, once asked")
        term.type("y")
        screen = term.wait_for("forgot 1 conversation, 2 messages, 2 memory records")
        screen = wait_gone(term, "2 conversations")  # the list, searched again
        assert "(forgotten)" in screen and "This chat goes on in a new conversation." in screen
        term.keys("Escape")
        screen = wait_gone(term, "Resume a conversation")
        assert "new conversation — fake-model" in screen

        term.type("What was my locker code, and where was the trip?")
        term.keys("Enter")
        term.wait_reply("ok: What was my locker code")
        sent = last_sent(url)
        assert LOCKER not in sent and TRIP not in sent
        term.keys("C-q")
        term.wait_gone()
    assert in_files(home, LOCKER) == []
    assert in_files(home, TRIP) == []
