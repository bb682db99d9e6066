"""Regenerate, edit, fork and an attachment with the real `newt` in tmux.

Against the standalone fake server (scripted over HTTP); asserted on what the
terminal shows and on the requests the server received. With NEWT_SCREENSHOTS=1
it writes assets/screenshots/regenerate.svg, attachment.svg and fork.svg.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.fake_process import fake_server
from tests.support.tmux import NEWT, Terminal, have_tmux, newt_env, terminal

pytestmark = pytest.mark.skipif(not have_tmux(), reason="needs tmux and an installed newt")


def script(base_url: str, *texts: str) -> None:
    root = base_url.removesuffix("/v1")
    items = [{"type": "reply", "text": t} for t in texts]
    httpx.post(f"{root}/__fake__/script", json=items, timeout=10).raise_for_status()


def chat_bodies(base_url: str) -> list[dict[str, Any]]:
    root = base_url.removesuffix("/v1")
    found = httpx.get(f"{root}/__fake__/requests", timeout=10).json()
    return [r["body"] for r in found if r["path"].endswith("/chat/completions")]


def wait_until_gone(term: Terminal, *texts: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while any(t in term.screen() for t in texts):
        assert time.monotonic() < deadline, term.screen()
        time.sleep(0.2)


def test_regenerate_edit_attach_and_fork_in_a_terminal(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("Ship date: 14 March. Owner: Ada Quist.\n")
    home = tmp_path / "home"
    home.mkdir()
    with fake_server() as url, terminal() as term:
        script(
            url,
            "A lake is a large body of still water.",
            "Ponds are smaller than lakes.",
            "A pond is small and shallow: sunlight reaches its bottom.",
        )
        term.start(f"cd {work} && exec {NEWT} --base-url {url} --model fake-model", newt_env(home))
        term.wait_for("Enter sends")
        term.type("What is a lake?")
        term.keys("Enter")
        term.wait_reply("large body of still water")
        term.type("And a pond?")
        term.keys("Enter")
        term.wait_reply("Ponds are smaller than lakes.")

        # regenerate: the new reply replaces the old one, which is never sent again
        term.keys("C-r")
        # and the turn before it never leaves the screen, not even for a frame
        deadline = time.monotonic() + 20
        frames = []
        while "sunlight reaches its bottom" not in (frames or [""])[-1]:
            assert time.monotonic() < deadline, frames[-1]
            frames.append(term.screen())
        for _ in range(30):  # the reload after the reply is stored
            frames.append(term.screen())
            time.sleep(0.01)
        assert all("large body of still water" in f for f in frames)
        screen = term.wait_reply("sunlight reaches its bottom")
        assert "Ponds are smaller than lakes." not in screen
        assert screen.count("And a pond?") == 1
        shot = term.screenshot("regenerate", "newt: ctrl+r regenerates the last reply")
        assert "sunlight" in shot.read_text()
        assert "Ponds are smaller" not in json.dumps(chat_bodies(url)[-1])

        # edit: the last prompt comes back into the bar; sending replaces that turn
        term.keys("F4")
        term.wait_for("editing the last prompt")
        term.type(" One line, please.")
        term.keys("Enter")
        screen = term.wait_reply("ok: And a pond? One line, please.")
        assert "sunlight reaches its bottom" not in screen

        # an attachment, completed from the prompt bar
        script(url, "The ship date is 14 March; Ada Quist owns it.")
        term.type("Summarize @no")
        term.wait_for("@notes.txt")
        term.keys("Tab")
        term.wait_for("Summarize @notes.txt")  # seen before typing on: see models test
        term.type("briefly.")
        term.keys("Enter")
        screen = term.wait_reply("Ada Quist owns it.")
        assert "Summarize @notes.txt briefly." in screen
        sent = chat_bodies(url)[-1]["messages"][-1]["content"]
        assert '<attachment path="notes.txt">' in sent and "Owner: Ada Quist." in sent
        term.screenshot("attachment", "newt: @path attaches a file (Tab completes the path)")

        # a bad attachment: nothing is sent, the prompt stays
        before = len(chat_bodies(url))
        term.type("What about @missing.txt?")
        term.keys("Enter")
        term.wait_for("no such file")
        assert len(chat_bodies(url)) == before

        # fork at the first turn, then the resume picker shows it under its parent
        term.keys("C-u")
        wait_until_gone(term, "What about @missing.txt?")
        term.type("/fork 1")
        term.keys("Enter")
        # said in the log, where it stays, and the fork is titled apart from its original
        screen = term.wait_for("Forked at turn 1 into a new conversation")
        assert "What is a lake? (fork)" in screen
        wait_until_gone(term, "Not sent")  # the picture without the toasts
        term.keys("C-o")
        screen = term.wait_for("↳ fork of What is a lake?")
        term.screenshot(
            "fork", "newt: /fork continues from an earlier turn; /resume shows the parent"
        )
        term.keys("Escape")
        term.keys("C-q")
        term.wait_gone()
