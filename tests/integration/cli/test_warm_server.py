"""`newt --local` keeps its llama-server warm for the next newt, then stops it.

Real `newt` processes, a stand-in for llama-server (the fake OpenAI server,
which speaks its flags) that logs each start. The next `newt -c -p` on the
same model uses the running server instead of loading the model again; the
server stops by itself once no newt has used it for `local_keep_alive`
seconds, and `newt --local --stop` stops it at once. The real llama-server is
in the e2e tests.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from newt.local.keeper import process_alive
from tests.support.paths import FAKE_SERVER
from tests.support.session_helpers import newt_cmd


def stand_in(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(binary, model, starts): `starts` gets one line, the pid, per server start."""
    starts = tmp_path / "starts"
    binary = tmp_path / "llama-server"
    binary.write_text(
        f'#!/bin/sh\necho $$ >> "{starts}"\nexec "{sys.executable}" "{FAKE_SERVER}" "$@"\n'
    )
    binary.chmod(0o755)
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    return binary, model, starts


def run(home: Path, tmp_path: Path, keep_alive: str, *argv: str) -> dict[str, object]:
    binary, model, _ = stand_in(tmp_path)
    env = {
        "NEWT_LLAMA_SERVER": str(binary),
        "NEWT_LLAMA_CACHE": str(tmp_path / "cache"),  # no MiniLM: no second server
        "NEWT_LOCAL_KEEP_ALIVE": keep_alive,
    }
    done = newt_cmd("--local", str(model), *argv, "--json", home=home, env=env)
    assert done.returncode == 0, done.stderr
    data: dict[str, object] = json.loads(done.stdout)
    return data


def pids(starts: Path) -> list[int]:
    return [int(line) for line in starts.read_text().split()] if starts.exists() else []


def gone(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not process_alive(pid)


def test_the_next_newt_uses_the_warm_server_and_stop_stops_it(
    tmp_path: Path, _isolated_home: Path
) -> None:
    starts = tmp_path / "starts"
    first = run(_isolated_home, tmp_path, "60", "-p", "hello warm")
    assert first["reply"] == "ok: hello warm"
    [server] = pids(starts)
    assert process_alive(server)  # it outlived the newt that started it
    second = run(_isolated_home, tmp_path, "60", "-c", "-p", "again")
    assert second["reply"] == "ok: again"
    assert pids(starts) == [server]  # not started again
    stop = newt_cmd(
        "--local", "--stop", home=_isolated_home, env={"NEWT_LLAMA_CACHE": str(tmp_path / "cache")}
    )
    assert stop.returncode == 0, stop.stderr
    assert "stopped 1" in stop.stdout
    assert gone(server, 10)
    assert not list((tmp_path / "cache" / "servers").glob("*.json"))
    # the cache directory of the warm servers is private
    assert (tmp_path / "cache" / "servers").stat().st_mode & 0o777 == 0o700


def test_an_idle_warm_server_stops_by_itself(tmp_path: Path, _isolated_home: Path) -> None:
    run(_isolated_home, tmp_path, "1", "-p", "hello")
    [server] = pids(tmp_path / "starts")
    assert gone(server, 15)  # one second idle, then the keeper's next look
    assert not list((tmp_path / "cache" / "servers").glob("*.json"))


def test_keep_alive_zero_stops_the_server_with_newt(tmp_path: Path, _isolated_home: Path) -> None:
    run(_isolated_home, tmp_path, "0", "-p", "hello")
    [server] = pids(tmp_path / "starts")
    assert gone(server, 10)
    assert not (tmp_path / "cache" / "servers").exists() or not os.listdir(
        tmp_path / "cache" / "servers"
    )
