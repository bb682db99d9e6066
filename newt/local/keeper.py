"""The process that keeps a warm llama-server: `python -m newt.local.keeper`.

Started detached by the first newt that needs the server (newt.local.warm),
it runs llama-server as its child and stops it, and itself, once no newt has
used it for `--keep-alive` seconds: each newt using the server holds a lease
(a file named by its pid in `<state>.users/`); a lease whose process is gone
is removed. SIGTERM (`newt --local --stop`) stops it at once. Why a process of
its own: the server must outlive the newt that started it (the next `newt -p`
finds the model loaded and the conversation's prefix cached), yet never be an
orphan nobody stops.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType

from newt.local.server import die_with_parent, stop_process

POLL_S = 0.5


def process_alive(pid: int) -> bool:
    """Whether a process with this pid exists (signal 0 checks, sends nothing)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, as another user's
    return True


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` (created 0600), released on leaving."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def read_state(path: Path) -> tuple[int, int] | None:
    """(keeper pid, port) from a state file, or None."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return int(data["keeper"]), int(data["port"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def forget_server(state: Path, keeper: int) -> None:
    """The keeper `keeper` is gone (-1: whichever): clear its files, not
    another keeper's."""
    found = read_state(state)
    if found is not None and keeper != -1 and found[0] != keeper:
        return
    state.unlink(missing_ok=True)
    stem = state.with_suffix("")
    shutil.rmtree(stem.with_name(stem.name + ".users"), ignore_errors=True)


def live_users(users: Path) -> list[int]:
    """The pids holding a lease; leases of processes that are gone are removed."""
    alive = []
    for lease in users.glob("*"):
        try:
            pid = int(lease.name)
        except ValueError:
            continue
        if process_alive(pid):
            alive.append(pid)
        else:
            lease.unlink(missing_ok=True)
    return alive


def keep(command: Sequence[str], state: Path, lock: Path, log: Path, keep_alive_s: float) -> int:
    """Run `command` until it exits, a SIGTERM comes, or no lease has been held
    for `keep_alive_s` seconds; then stop it. Returns the server's exit status
    (0 when the keeper stopped it). Going idle is decided under the lock a newt
    takes to attach, and the state file goes with it: no newt attaches to a
    server that is stopping."""
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    users = state.with_suffix(".users")
    with open(log, "ab") as out:
        child = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
        )
    idle_since = time.monotonic()
    while not stopping and child.poll() is None:
        if live_users(users):
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since >= keep_alive_s:
            with locked(lock):
                if not live_users(users):
                    forget_server(state, os.getpid())
                    break
        time.sleep(POLL_S)
    if child.poll() is not None:
        return child.returncode or 0
    stop_process(child)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m newt.local.keeper")
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--lock", type=Path, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--keep-alive", type=float, required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        return keep(command, args.state, args.lock, args.log, args.keep_alive)
    finally:
        forget_server(args.state, os.getpid())
        args.log.unlink(missing_ok=True)


if __name__ == "__main__":
    raise SystemExit(main())
