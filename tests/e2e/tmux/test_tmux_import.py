"""Import, then ask, with the real `newt`: `newt import` of a small Claude
export from 8 May 2023, then the TUI in tmux asks a question that history answers.

The request the fake server receives carries the imported turn under its own day,
and the evidence sidebar shows the capsule dated 8 May 2023, not today. Against the
standalone fake server with a fixed reply (an echo would put the evidence block,
dates and all, in the chat log too, and prove nothing about the sidebar).
"""

from __future__ import annotations

import os
import subprocess
from datetime import date
from pathlib import Path

import pytest

from tests.support.fake_process import fake_server
from tests.support.paths import FIXTURES
from tests.support.received import last_sent
from tests.support.tmux import NEWT, have_tmux, newt_env, terminal

pytestmark = pytest.mark.skipif(not have_tmux(), reason="needs tmux and an installed newt")

EXPORT = FIXTURES / "import" / "claude_passport_2023.json"
SAID = "I put my passport in the blue tin on the top shelf of the hallway cupboard."
REPLY = "It is in the blue tin, as you said."
WIDTH, SIDEBAR = 130, 48  # the sidebar shows from 120 columns, 48 wide on the right


def test_imported_history_answers_with_its_own_date(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[recall]\nembeddings = "off"\n', encoding="utf-8")
    env = {**newt_env(home), "TZ": "UTC", "COLUMNS": str(WIDTH), "LINES": "40"}
    done = subprocess.run(
        [str(NEWT), "import", str(EXPORT)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "newt import (claude): imported 1 conversation(s), 1 turn(s)" in done.stderr

    with fake_server("--reply-text", REPLY) as url, terminal(WIDTH, 40) as term:
        term.start(f"cd {tmp_path} && exec {NEWT} --base-url {url} --model fake-model", env)
        term.wait_for("Enter sends")
        term.type("Where did I put my passport?")
        term.keys("Enter")
        term.wait_for(REPLY)
        screen = term.wait_for("8 May 2023")

        sent = last_sent(url)
        assert SAID in sent  # the imported turn, verbatim
        assert "Said on Monday 8 May 2023:" in sent  # under the day it was said
        assert date.today().strftime("%B %Y") != "May 2023"  # else the date proves nothing

        sidebar = "\n".join(line[WIDTH - SIDEBAR :] for line in screen.splitlines())
        log = "\n".join(line[: WIDTH - SIDEBAR] for line in screen.splitlines())
        assert "Retained evidence" in sidebar
        assert "8 May 2023" in sidebar and "blue tin" in sidebar
        today = date.today()
        assert f"{today.day} {today:%b %Y}" not in sidebar
        assert "8 May 2023" not in log  # the date on screen is the sidebar's, not an echo
        term.screenshot("import-evidence", "newt: an imported 2023 turn recalled with its date")
        term.keys("C-q")
        term.wait_gone()
