"""The fake OpenAI server in a process of its own (`python -m tests.support.fake_openai`),
for the `newt` a test runs as a command, in tmux or from a built wheel."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.paths import REPO


@contextmanager
def fake_server(*args: str) -> Iterator[str]:
    """Start it with these arguments (`--reply-text`, `--script`, ...); yields its base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fake_openai", "--port", "0", *args],
        cwd=REPO,
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
