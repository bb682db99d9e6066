"""Recall by meaning embeds in process by default, so `newt --local` runs one
llama-server; with `[recall] embeddings = "server"` it runs all-MiniLM-L6-v2 on a
second managed llama-server when the GGUF is cached, and one server when it is not.

The servers here are the loopback fake behind a stand-in binary that records
its command line (the real MiniLM server is in tests/e2e/models/test_llama_embeddings.py).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from newt.agent.local.first_run import local_embeddings_server, use_local_embeddings
from newt.config import Config
from newt.local.server import LocalLlamaServer, reply_token_cap
from newt.local.setup import EMBEDDING_MODEL_FILE
from tests.support.paths import FAKE_SERVER
from tests.support.session_helpers import newt_cmd


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache"
    path.mkdir()
    monkeypatch.setenv("NEWT_LLAMA_CACHE", str(path))
    return path


def _flags(argv: list[str]) -> dict[str, str]:
    """`-x value` pairs of a command line (flags without a value map to "")."""
    out: dict[str, str] = {}
    for i, arg in enumerate(argv):
        if arg.startswith("-"):
            nxt = argv[i + 1] if i + 1 < len(argv) else ""
            out[arg] = "" if nxt.startswith("-") else nxt
    return out


def test_the_embeddings_server_runs_only_when_asked_with_the_cached_model(cache: Path) -> None:
    (cache / EMBEDDING_MODEL_FILE).write_bytes(b"GGUF")
    assert local_embeddings_server(Config()) is None  # "auto": in process, no server
    config = Config()
    config.recall.embeddings = "server"
    (cache / EMBEDDING_MODEL_FILE).unlink()
    assert local_embeddings_server(config) is None  # no GGUF: no server
    (cache / EMBEDDING_MODEL_FILE).write_bytes(b"GGUF")
    server = local_embeddings_server(config)
    assert server is not None and server.port is not None  # known before it starts
    binary = Path("/opt/llama-server")
    argv = server.command(binary)
    flags = _flags(argv)
    assert argv[0] == str(binary) and flags["-m"] == str(cache / EMBEDDING_MODEL_FILE)
    assert (flags["-c"], flags["-t"], flags["-np"]) == ("512", "1", "1")
    assert flags["--pooling"] == "mean" and "--embeddings" in flags and "--no-repack" in flags
    assert flags["--port"] == str(server.port) and flags["--host"] == "127.0.0.1"

    # The chat server beside it keeps its own command line: no embeddings there.
    chat = LocalLlamaServer(extra_args=["-n", str(reply_token_cap())], port=8080)
    chat_flags = _flags(chat.command(binary))
    assert chat_flags["-m"] == str(cache / "SmolLM2-135M-Instruct.Q4_1.gguf")
    assert chat_flags["-c"] == "2048" and chat_flags["-n"] == "512"
    assert "--embeddings" not in chat_flags and chat_flags["--port"] == "8080"

    use_local_embeddings(config, server)
    assert config.recall.embeddings_url == server.base_url
    assert config.recall.embedding_model == "all-MiniLM-L6-v2.Q8_0"
    # the port changes every run; the vectors' space must not
    assert config.embedding_space == "newt --local all-MiniLM-L6-v2.Q8_0"

    # Turned off, or the user's own embeddings server: no second server.
    config = Config()
    config.recall.embeddings = "off"
    assert local_embeddings_server(config) is None
    config = Config()
    config.recall.embeddings = "server"
    config.recall.embeddings_url = "http://127.0.0.1:9999/v1"
    assert local_embeddings_server(config) is None


def _stand_in_binary(tmp_path: Path) -> tuple[Path, Path]:
    """A llama-server stand-in (the fake speaks its flags) logging `pid argv` per start."""
    fake = FAKE_SERVER
    log = tmp_path / "starts.log"
    binary = tmp_path / "llama-server"
    binary.write_text(
        f'#!/bin/sh\necho "$$ $*" >> "{log}"\nexec "{sys.executable}" "{fake}" "$@"\n'
    )
    binary.chmod(0o755)
    return binary, log


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def _starts(log: Path) -> list[tuple[int, list[str]]]:
    lines = log.read_text().splitlines() if log.exists() else []
    return [(int(pid), rest.split()) for pid, _, rest in (line.partition(" ") for line in lines)]


def test_newt_local_starts_both_servers_when_asked_and_stops_them(
    tmp_path: Path, cache: Path, _isolated_home: Path
) -> None:
    binary, log = _stand_in_binary(tmp_path)
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    (cache / EMBEDDING_MODEL_FILE).write_bytes(b"GGUF")
    env = {"NEWT_LLAMA_SERVER": str(binary), "NEWT_LLAMA_CACHE": str(cache)}

    # By default recall embeds in process: one server, even with the GGUF cached.
    (_isolated_home / "config.toml").write_text('[recall]\nembeddings = "off"\n')
    result = newt_cmd("--local", str(model), "-p", "hello", "--json", home=_isolated_home, env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["reply"] == "ok: hello"
    assert [_flags(argv)["-m"] for _, argv in _starts(log)] == [str(model)]
    log.unlink()
    (_isolated_home / "config.toml").unlink()
    # (no MiniLM wheel in this cache, and no index to fetch it from: recall by words)
    offline = {**env, "PIP_INDEX_URL": "http://127.0.0.1:9/simple"}
    result = newt_cmd("--local", str(model), "-p", "hi", "--json", home=_isolated_home, env=offline)
    assert result.returncode == 0, result.stderr
    assert [_flags(argv)["-m"] for _, argv in _starts(log)] == [str(model)]

    # With `embeddings = "server"`: a second server for embeddings, and both stop with newt.
    log.unlink()
    (_isolated_home / "config.toml").write_text('[recall]\nembeddings = "server"\n')
    result = newt_cmd("--local", str(model), "-p", "again", "--json", home=_isolated_home, env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["reply"] == "ok: again"
    starts = _starts(log)
    by_model = {_flags(argv)["-m"]: (pid, _flags(argv)) for pid, argv in starts}
    assert set(by_model) == {str(model), str(cache / EMBEDDING_MODEL_FILE)}
    _, embed_flags = by_model[str(cache / EMBEDDING_MODEL_FILE)]
    assert "--embeddings" in embed_flags and embed_flags["-c"] == "512"
    assert by_model[str(model)][1]["--port"] != embed_flags["--port"]
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid, _ in starts) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid, _ in starts), "a managed llama-server outlived newt"
