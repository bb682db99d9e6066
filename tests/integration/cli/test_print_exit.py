"""Every way out of `newt -p` returns in bounded time, whatever background work is pending.

Each test runs the real `newt` as a subprocess against a database holding
records nothing has embedded yet, with an embeddings endpoint that refuses
connections: the embedding queue is then retrying in the background when the
turn ends. That queue used to lose the cancel newt sent it on
exit (Python 3.11's `asyncio.wait_for` drops a cancel that lands as its
inner wait completes) and retry for ever: `newt -c -p` printed its answer or
its error and never exited.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.session_helpers import MODEL, newt_cmd

# Generous for a loaded 2-core machine; the hang it guards against is endless.
EXIT_WITHIN_S = 25.0


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def history(fake_openai: FakeOpenAI, _isolated_home: Path) -> Path:
    """Three turns stored, none embedded; later runs embed through a dead endpoint."""
    # newt embeds in process by default: the history turns must not embed
    (_isolated_home / "config.toml").write_text('[recall]\nembeddings = "off"\n')
    for i in range(3):
        fake_openai.script(Reply(text=f"reply number {i} about harbors and codes"))
        done = newt_cmd(
            "--base-url", fake_openai.base_url, "--model", MODEL, "-c", "-p", f"turn {i}",
            home=_isolated_home,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    dead = f"http://127.0.0.1:{_dead_port()}/v1"
    (_isolated_home / "config.toml").write_text(
        f'[backend]\nmax_retries = 0\n\n[recall]\nembeddings_url = "{dead}"\n'
    )
    con = sqlite3.connect(_isolated_home / "newt.db")
    records = con.execute("SELECT count(*) FROM memory_records").fetchone()[0]
    vectors = con.execute("SELECT count(*) FROM memory_vectors").fetchone()[0]
    con.close()
    assert records >= 3 and vectors == 0  # work is pending for the embedding queue
    return _isolated_home


def _timed(*argv: str, home: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    try:
        result = newt_cmd(*argv, home=home, timeout=EXIT_WITHIN_S)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(
            f"newt {' '.join(argv)} still running after {EXIT_WITHIN_S:g} s: {exc.stderr!r}"
        ) from None
    return result, time.monotonic() - start


def test_success_exits(fake_openai: FakeOpenAI, history: Path) -> None:
    fake_openai.script(Reply(text="all good"))
    result, _ = _timed(
        "--base-url", fake_openai.base_url, "--model", MODEL, "-c", "-p", "and now?",
        home=history,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == "all good\n" and "Traceback" not in result.stderr


@pytest.mark.parametrize("as_json", [False, True])
def test_backend_error_exits(history: Path, as_json: bool) -> None:
    # the report: a conversation with history, a backend that is not there
    dead = f"http://127.0.0.1:{_dead_port()}/v1"
    extra = ("--json",) if as_json else ()
    result, _ = _timed(
        "-c", "-p", "anyone there?", "--base-url", dead, "--model", "x", *extra, home=history
    )
    assert result.returncode == 1
    assert "Your message is saved" in result.stderr and "Traceback" not in result.stderr
    if as_json:
        assert json.loads(result.stdout)["status"] == "failed"


def test_cut_off_exits(fake_openai: FakeOpenAI, history: Path) -> None:
    fake_openai.script(Reply(text="half of a long answer", chunk_size=4, disconnect_after_chunks=3))
    result, _ = _timed(
        "--base-url", fake_openai.base_url, "--model", MODEL, "-c", "-p", "tell me",
        home=history,
    )  # fmt: skip
    assert result.returncode == 1 and "cut off" in result.stderr


def test_bad_input_exits(fake_openai: FakeOpenAI, history: Path) -> None:
    # an unknown id is found out after the session (and its queue) started
    result, _ = _timed(
        "--base-url", fake_openai.base_url, "--model", MODEL, "-r", "ffffffff", "-p", "hi",
        home=history,
    )  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_exits(fake_openai: FakeOpenAI, history: Path) -> None:
    fake_openai.script(Reply(text="word " * 200, chunk_size=5, delay_s=0.05))
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "NEWT_CONFIG")}
    env["NEWT_HOME"] = str(history)
    argv = ["--base-url", fake_openai.base_url, "--model", MODEL, "-c", "-p", "talk"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "newt", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=_default_sigint,  # a background shell's children ignore SIGINT
    )
    assert proc.stdout is not None
    assert proc.stdout.read(10)  # streaming
    proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(timeout=EXIT_WITHIN_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"newt did not exit after Ctrl-C: {proc.communicate()[1]!r}") from None
    assert code == 130


STUBBORN = """
import asyncio, sys
from newt.cli.bounded_exit import run_bounded

async def stubborn():
    while True:  # swallows every cancel, as a buggy background loop might
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            pass

async def main():
    asyncio.get_running_loop().create_task(stubborn())
    await asyncio.sleep(0)
    return 7

sys.exit(run_bounded(main(), reap_s=0.5))
"""


def test_a_task_that_never_stops_is_left_behind() -> None:
    # the last resort: a leftover task that ignores every cancel cannot hold the exit
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", STUBBORN], capture_output=True, text=True, timeout=EXIT_WITHIN_S
    )
    assert result.returncode == 7, result.stderr
    assert time.monotonic() - start < 10 and result.stderr == ""


OPEN_THREAD = """
import asyncio, sys, threading
from newt.cli.bounded_exit import run_bounded

async def main():
    # a worker thread nobody stops, as a store left open by a twice-cancelled close
    threading.Thread(target=threading.Event().wait, name="connection").start()
    print("said")
    return 5

sys.exit(run_bounded(main()))
"""


def test_a_thread_that_never_stops_cannot_hold_the_exit() -> None:
    # a detached summary writer hung 40 minutes at exit on its store's connection thread
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", OPEN_THREAD], capture_output=True, text=True, timeout=EXIT_WITHIN_S
    )
    assert (result.returncode, result.stdout) == (5, "said\n"), result.stderr
    assert time.monotonic() - start < 10
