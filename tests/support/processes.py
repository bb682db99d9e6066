"""Whether a process still runs (read from /proc: a zombie has already exited)."""

from __future__ import annotations

import time
from pathlib import Path


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has already exited


def wait_gone(pid: int, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def summary_writers(conversation_id: str) -> list[int]:
    """The pids of detached `newt --finish-summary` runs for this conversation
    (print mode starts them; they outlive the run that started them)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--finish-summary" in argv and conversation_id.encode() in argv:
            found.append(int(entry.name))
    return [pid for pid in found if alive(pid)]
