"""No orphaned MCP servers: a stdio server ends with the process that started it.

tests/support/mcp_servers/hold_open.py starts the demo server through McpManager and
waits inside a tool call that blocks the server's event loop, so the
server cannot see its stdin close. Killing it (SIGKILL: no cleanup runs at all),
interrupting it (Ctrl-C) or terminating it must each leave no server behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.mcp_servers import DEMO_SERVER
from tests.support.paths import REPO
from tests.support.processes import alive, wait_gone

ROOT = REPO


def _default_sigint() -> None:
    """In the child: Ctrl-C as a user's terminal delivers it. A shell running
    the tests in the background ignores SIGINT, and children inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
def test_the_server_does_not_outlive_its_client(how: signal.Signals) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.mcp_servers.hold_open"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=_default_sigint,
    )
    server_pid = 0
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("pid="), line
        server_pid = int(line.strip().removeprefix("pid="))
        assert alive(server_pid)
        time.sleep(0.3)  # now inside the blocking call
        proc.send_signal(how)
        proc.wait(timeout=30)
        assert wait_gone(server_pid), f"MCP server {server_pid} outlived its client ({how.name})"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if server_pid and alive(server_pid):
            os.kill(server_pid, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL])
def test_newt_print_mode_leaves_no_server(
    how: signal.Signals, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """The real `newt -p`, stopped (Ctrl-C) or killed inside a tool call."""
    marker = f"mcp-print-{uuid.uuid4().hex[:8]}"
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        "[mcp.servers.demo]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(DEMO_SERVER))}, {json.dumps(marker)}]\n"
        'approve = "always"\n'
    )
    fake_openai.script(
        Reply(text="", tool_calls=[{"name": "demo__block", "arguments": {"seconds": 120}}])
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "NEWT_"))}
    env["NEWT_HOME"] = str(home)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "newt",
            "-p",
            "block",
            "--base-url",
            fake_openai.base_url,
            "--model",
            "fake-model",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=_default_sigint,
        text=True,
    )
    servers: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while not servers and time.monotonic() < deadline:
            servers = _pids_with(marker)
            time.sleep(0.05)
        assert servers, "the MCP server never started"
        while len(fake_openai.chat_requests) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # inside the blocking call now
        proc.send_signal(how)
        proc.wait(timeout=30)
        if how == signal.SIGINT:
            assert proc.returncode == 130, proc.stderr.read() if proc.stderr else ""
        assert wait_gone(servers[0]), f"newt -p left its MCP server running ({how.name})"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in _pids_with(marker):
            os.kill(pid, signal.SIGKILL)


def _pids_with(marker: str) -> list[int]:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    return [int(p) for p in found.split() if alive(int(p))]
