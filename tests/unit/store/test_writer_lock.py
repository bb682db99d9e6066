"""The per-conversation writer lock between real processes (each runs newt's own code)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import newt.store.writer_lock as wl
from newt.store.writer_lock import ConversationBusyError, conversation_writer, lock_path
from tests.support.paths import REPO

ROOT = REPO

HOLD = """
import asyncio, sys
from newt.store.writer_lock import conversation_writer

async def main():
    async with conversation_writer(sys.argv[1], sys.argv[2]):
        print("held", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)

asyncio.run(main())
"""

COUNT = """
import asyncio, sys
from pathlib import Path
from newt.store.writer_lock import conversation_writer

async def main(db, counter, times):
    print("ready", flush=True)
    while not Path(counter + ".go").exists():  # start together, not one after the other
        await asyncio.sleep(0.005)
    for _ in range(times):
        async with conversation_writer(db, "c1"):
            value = int(Path(counter).read_text() or "0")
            await asyncio.sleep(0.002)  # a read-modify-write that would lose updates unlocked
            Path(counter).write_text(str(value + 1))

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


def _python(code: str, *args: str, stdin: int | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        stdin=stdin,
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding conversation c1's writer lock until told (a line on stdin)."""
    proc = _python(HOLD, str(tmp_path / "newt.db"), "c1", stdin=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


async def test_a_second_process_waits_until_the_first_lets_go(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    waits: list[int | None] = []
    ticks = 0
    acquired = asyncio.Event()

    async def take() -> None:
        async with conversation_writer(tmp_path / "newt.db", "c1", on_wait=waits.append):
            acquired.set()

    async def tick() -> None:
        nonlocal ticks
        while not acquired.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    taker = asyncio.create_task(take())
    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.5)
    assert not acquired.is_set()
    assert waits == [holder.pid]  # told once, with who holds it
    assert ticks >= 20  # the loop kept running while waiting
    assert holder.stdin is not None
    holder.stdin.write("go\n")
    holder.stdin.flush()
    await asyncio.wait_for(taker, 5)
    await ticker
    assert holder.wait(timeout=5) == 0
    assert not lock_path(tmp_path / "newt.db", "c1").exists()  # nothing left behind


async def test_a_killed_holder_frees_the_conversation(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=5)
    started = time.monotonic()
    async with conversation_writer(tmp_path / "newt.db", "c1", timeout_s=5):
        pass
    assert time.monotonic() - started < 2


async def test_other_conversations_do_not_wait(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    waits: list[int | None] = []
    async with conversation_writer(tmp_path / "newt.db", "c2", on_wait=waits.append, timeout_s=1):
        pass
    assert waits == []


async def test_waiting_can_time_out_with_a_clear_error(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    with pytest.raises(ConversationBusyError) as info:
        async with conversation_writer(tmp_path / "newt.db", "c1", timeout_s=0.3):
            raise AssertionError("must not get the lock")
    assert f"pid {holder.pid}" in str(info.value) and "c1" in str(info.value)


async def test_waiting_can_be_cancelled(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    async def take() -> None:
        async with conversation_writer(tmp_path / "newt.db", "c1"):
            raise AssertionError("must not get the lock")

    task = asyncio.create_task(take())
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_two_processes_never_write_at_once(tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0")
    procs = [_python(COUNT, str(tmp_path / "newt.db"), str(counter), "100") for _ in range(2)]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    (tmp_path / "counter.go").touch()
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    assert counter.read_text() == "200"  # no read-modify-write was lost


async def test_the_lock_directory_is_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        async with conversation_writer(tmp_path / "newt.db", "c1"):
            path = lock_path(tmp_path / "newt.db", "c1")
            assert path.parent.stat().st_mode & 0o777 == 0o700
            assert path.stat().st_mode & 0o777 == 0o600
            assert path.read_text().strip() == str(os.getpid())
    finally:
        os.umask(old)


def test_lock_file_names_are_safe(tmp_path: Path) -> None:
    path = lock_path(tmp_path / "newt.db", "../../etc/passwd")
    assert path.parent == tmp_path / "newt.db.locks"
    assert path.name == "______etc_passwd.lock"


async def test_without_fcntl_it_does_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wl, "_fcntl", None)
    async with (
        conversation_writer(tmp_path / "newt.db", "c1"),
        conversation_writer(tmp_path / "newt.db", "c1", timeout_s=0.1),
    ):
        pass  # no lock, so taking it twice does not wait
    assert not (tmp_path / "newt.db.locks").exists()
