"""LocalLlamaServer lifecycle, with a stand-in binary (tests/support/fake_openai.py speaks
llama-server's flags) so start, health wait, stop and cleanup run in well under a
second. The real binary is exercised by test_llama_e2e.py."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from newt.backend.client import ChatClient
from newt.backend.errors import LocalServerError
from newt.backend.types import ChatResult
from newt.local.server import LocalLlamaServer, find_llama_server
from tests.support.paths import FAKE_SERVER, REPO


def script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def fake_binary(tmp_path: Path) -> Path:
    return script(tmp_path, "llama-server", f'exec "{sys.executable}" "{FAKE_SERVER}" "$@"')


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF")
    return path


def gone(pid: int) -> bool:
    """True once the process has exited (a zombie counts: it no longer runs)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.05)
    return False


def test_start_serves_and_stop_terminates(fake_binary: Path, model: Path):
    with LocalLlamaServer(model, binary=fake_binary, ctx=1536) as server:
        assert server.process is not None
        pid = server.process.pid
        assert server.base_url.startswith("http://127.0.0.1:")
        assert server.base_url.endswith("/v1")
        props = httpx.get(f"{server.root_url}/props").json()
        assert props["default_generation_settings"]["n_ctx"] == 1536  # -c was passed
    assert server.process is None
    assert wait_gone(pid)


async def test_async_context_manager_and_client(fake_binary: Path, model: Path):
    async with LocalLlamaServer(model, binary=fake_binary) as server:
        assert server.process is not None
        pid = server.process.pid
        async with ChatClient(server.base_url, "local") as client:
            result = await client.complete([{"role": "user", "content": "ping"}])
    assert isinstance(result, ChatResult)
    assert result.text == "ok: ping"
    assert wait_gone(pid)


def test_command_line(fake_binary: Path, model: Path):
    server = LocalLlamaServer(model, ctx=1024, threads=3, port=4321, extra_args=["--jinja"])
    assert server.command(fake_binary) == [
        str(fake_binary),
        "-m", str(model),
        "--host", "127.0.0.1",
        "--port", "4321",
        "-c", "1024",
        "-np", "1",
        "-t", "3",
        "--no-repack",
        "--jinja",
    ]  # fmt: skip


def test_keyboard_interrupt_stops_the_server(fake_binary: Path, model: Path):
    pid = None
    with pytest.raises(KeyboardInterrupt), LocalLlamaServer(model, binary=fake_binary) as server:
        assert server.process is not None
        pid = server.process.pid
        raise KeyboardInterrupt
    assert pid is not None and wait_gone(pid)


def test_binary_that_exits_reports_its_output(tmp_path: Path, model: Path):
    broken = script(
        tmp_path, "llama-server", "echo 'error: unknown model architecture' >&2; exit 3"
    )
    with pytest.raises(LocalServerError) as info:
        LocalLlamaServer(model, binary=broken).start()
    assert "exited with status 3" in info.value.message
    assert "unknown model architecture" in info.value.message


def test_server_that_never_gets_healthy_times_out_and_is_killed(tmp_path: Path, model: Path):
    pid_file = tmp_path / "pid"
    hung = script(
        tmp_path, "llama-server", f"echo $$ > {pid_file}; echo loading >&2; exec sleep 60"
    )
    server = LocalLlamaServer(model, binary=hung, startup_timeout_s=0.5)
    with pytest.raises(LocalServerError) as info:
        server.start()
    assert "did not become ready within 0.5 s" in info.value.message
    assert "loading" in info.value.message
    assert wait_gone(int(pid_file.read_text()))


def test_missing_binary_says_how_to_get_it(tmp_path: Path, model: Path, monkeypatch):
    monkeypatch.setenv("NEWT_LLAMA_SERVER", str(tmp_path / "nope"))
    with pytest.raises(LocalServerError) as info:
        LocalLlamaServer(model).start()
    assert "scripts/get_llama_server.sh" in info.value.message
    assert str(tmp_path / "nope") in info.value.message


def test_binary_from_the_cache_dir(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("NEWT_LLAMA_SERVER", raising=False)
    monkeypatch.setenv("NEWT_LLAMA_CACHE", str(tmp_path))
    cached = tmp_path / "llama-server-11434.0.0" / "llama-server"
    cached.parent.mkdir()
    cached.write_text("#!/bin/sh\n")
    cached.chmod(0o755)
    assert find_llama_server() == cached
    assert LocalLlamaServer().model_path == tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_missing_model_says_how_to_get_it(fake_binary: Path, tmp_path: Path):
    with pytest.raises(LocalServerError) as info:
        LocalLlamaServer(tmp_path / "absent.gguf", binary=fake_binary).start()
    assert "absent.gguf" in info.value.message
    assert "scripts/get_llama_server.sh" in info.value.message


CRASHING_PARENT = textwrap.dedent(
    """
    import os, sys
    from newt.local.server import LocalLlamaServer
    server = LocalLlamaServer(sys.argv[1], binary=sys.argv[2])
    server.start()
    print(server.process.pid, flush=True)
    if sys.argv[3] == "crash":
        raise RuntimeError("newt crashed")   # atexit must stop the server
    os.kill(os.getpid(), 9)                   # no atexit: PR_SET_PDEATHSIG must
    """
)


@pytest.mark.parametrize("how", ["crash", "kill"])
def test_server_dies_with_its_parent(fake_binary: Path, model: Path, how: str):
    parent = subprocess.run(
        [sys.executable, "-c", CRASHING_PARENT, str(model), str(fake_binary), how],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert parent.returncode != 0
    pid = int(parent.stdout.split()[0])
    assert wait_gone(pid), f"llama-server {pid} outlived its parent ({how})"
