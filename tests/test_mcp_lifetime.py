"""No orphaned MCP servers: a stdio server ends with the process that started it.

tests/mcp_servers/hold_open.py starts the demo server through McpManager and
waits inside a tool call that blocks the server's event loop, so the
server cannot see its stdin close. Killing it (SIGKILL: no cleanup runs at all),
interrupting it (Ctrl-C) or terminating it must each leave no server behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has already exited


def _wait_gone(pid: int, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
def test_the_server_does_not_outlive_its_client(how: signal.Signals) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.mcp_servers.hold_open"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    server_pid = 0
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("pid="), line
        server_pid = int(line.strip().removeprefix("pid="))
        assert _alive(server_pid)
        time.sleep(0.3)  # now inside the blocking call
        proc.send_signal(how)
        proc.wait(timeout=30)
        assert _wait_gone(server_pid), f"MCP server {server_pid} outlived its client ({how.name})"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if server_pid and _alive(server_pid):
            os.kill(server_pid, signal.SIGKILL)
