"""The approval prompt in a real terminal (tmux), and no MCP server left behind.

The real `newt` command, the standalone fake OpenAI server scripted to call a
tool of the demo MCP server (approve = "ask"), asserted on capture-pane.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.tmux.test_tmux_newt import NEWT, ROOT, Tmux
from tests.integration.mcp.test_mcp_lifetime import _alive, _wait_gone
from tests.mcp_servers import DEMO_SERVER

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None or not NEWT.exists(), reason="needs tmux and an installed newt"
)

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
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fake_openai", "--port", "0", "--script", str(script)],
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
    return [int(p) for p in found.split() if _alive(int(p))]


def test_approval_prompt_in_a_terminal(tmp_path: Path, scripted_server: str) -> None:
    marker = f"mcp-tmux-{uuid.uuid4().hex[:8]}"
    tmux = Tmux(_setup(tmp_path, marker))
    exit_file = tmp_path / "exit"
    try:
        tmux.start(
            f"cd {tmp_path} && {NEWT} --base-url {scripted_server} --model fake-model;"
            f" echo $? > {exit_file}"
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
    tmux = Tmux(_setup(tmp_path, marker))
    try:
        # exec: the pane's process is newt itself
        tmux.start(f"cd {tmp_path} && exec {NEWT} --base-url {scripted_server} --model fake-model")
        tmux.wait_for("Enter sends")
        tmux.keys("please echo", "Enter")
        tmux.wait_for("Run this tool?", timeout=30)
        [server] = _server_pids(marker)
        pane = subprocess.run(
            ["tmux", "list-panes", "-t", tmux.name, "-F", "#{pane_pid}"],
            capture_output=True,
            text=True,
        ).stdout.split()
        os.kill(int(pane[0]), signal.SIGKILL)
        assert _wait_gone(server), "a SIGKILLed newt left its MCP server running"
    finally:
        tmux.kill()
        for pid in _server_pids(marker):
            os.kill(pid, signal.SIGKILL)
