"""The approval prompt in a real terminal (tmux), and no MCP server left behind.

The real `newt` command, the standalone fake OpenAI server scripted to call a
tool of the demo MCP server (approve = "ask"), asserted on capture-pane.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_process import fake_server
from tests.support.mcp_servers import DEMO_SERVER
from tests.support.processes import alive, wait_gone
from tests.support.tmux import NEWT, Terminal, have_tmux

pytestmark = pytest.mark.skipif(not have_tmux(), reason="needs tmux and an installed newt")

HOSTILE = "[bold red]loud[/] [@click=app.quit]quit[/]"


@pytest.fixture
def scripted_server(tmp_path: Path) -> Iterator[str]:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {
                    "type": "reply",
                    "text": "",
                    "tool_calls": [{"name": "demo__echo", "arguments": {"text": HOSTILE}}],
                },
                {"type": "reply", "text": "The tool said it back."},
            ]
        )
    )
    with fake_server("--script", str(script)) as base_url:
        yield base_url


def _setup(tmp_path: Path, marker: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        "[mcp.servers.demo]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(DEMO_SERVER))}, {json.dumps(marker)}]\n"
        'approve = "ask"\n'
    )
    return {"NEWT_HOME": str(home), "TERM": "xterm-256color", "COLORTERM": ""}


def _server_pids(marker: str) -> list[int]:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    return [int(p) for p in found.split() if alive(int(p))]


def test_approval_prompt_in_a_terminal(tmp_path: Path, scripted_server: str) -> None:
    marker = f"mcp-tmux-{uuid.uuid4().hex[:8]}"
    env = _setup(tmp_path, marker)
    tmux = Terminal()
    exit_file = tmp_path / "exit"
    try:
        tmux.start(
            f"cd {tmp_path} && {NEWT} --base-url {scripted_server} --model fake-model;"
            f" echo $? > {exit_file}",
            env,
        )
        tmux.wait_for("Enter sends")
        tmux.keys("please echo", "Enter")
        screen = tmux.wait_for("Run this tool?", timeout=30)
        assert "Server  demo" in screen
        assert "Tool    echo" in screen
        assert HOSTILE.replace('"', "") in screen.replace('"', "")  # shown literally
        assert "Allow once" in screen and "Deny" in screen
        assert _server_pids(marker), "the server runs while the prompt waits"
        tmux.keys("a")
        screen = tmux.wait_for("The tool said it back.")
        assert "Run this tool?" not in screen
        tmux.keys("C-q")
        tmux.wait_gone()
        assert exit_file.read_text().strip() == "0"
        deadline = time.monotonic() + 10
        while _server_pids(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _server_pids(marker) == [], "newt quit but its MCP server lives on"
    finally:
        tmux.kill()
        for pid in _server_pids(marker):
            os.kill(pid, signal.SIGKILL)


def test_a_killed_newt_leaves_no_server(tmp_path: Path, scripted_server: str) -> None:
    marker = f"mcp-tmux-{uuid.uuid4().hex[:8]}"
    env = _setup(tmp_path, marker)
    tmux = Terminal()
    try:
        # exec: the pane's process is newt itself
        tmux.start(
            f"cd {tmp_path} && exec {NEWT} --base-url {scripted_server} --model fake-model", env
        )
        tmux.wait_for("Enter sends")
        tmux.keys("please echo", "Enter")
        tmux.wait_for("Run this tool?", timeout=30)
        [server] = _server_pids(marker)
        os.kill(tmux.pane_pid(), signal.SIGKILL)
        assert wait_gone(server), "a SIGKILLed newt left its MCP server running"
    finally:
        tmux.kill()
        for pid in _server_pids(marker):
            os.kill(pid, signal.SIGKILL)
