"""MCP servers the tests start: real processes speaking the real protocol."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DEMO_SERVER = Path(__file__).with_name("demo_server.py")


def stdio_server_table(**extra: object) -> dict[str, object]:
    """A [mcp.servers.NAME] table (unwrapped) that starts the demo server over stdio."""
    return {"command": sys.executable, "args": [str(DEMO_SERVER)], **extra}


def server_toml(name: str, approve: str = "always", **extra: str) -> str:
    """The same as config.toml text: [mcp.servers.NAME] starting the demo server."""
    lines = [
        f"[mcp.servers.{name}]",
        f"command = {json.dumps(sys.executable)}",
        f"args = [{json.dumps(str(DEMO_SERVER))}]",
        f'approve = "{approve}"',
    ]
    lines += [f"{k} = {v}" for k, v in extra.items()]
    return "\n".join(lines) + "\n"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def http_demo_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The demo server over streamable HTTP on a free loopback port: (url, process)."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(DEMO_SERVER), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the HTTP demo server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.kill()
        proc.wait(timeout=10)
