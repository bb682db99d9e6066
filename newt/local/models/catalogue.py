"""The catalogue of chat GGUFs newt offers to download, and which one suits this machine.

The models live in one data file, assets/local_models.toml, so their sizes and
checksums are checked in one place (newt/local/models/catalogue.py's tests).
The recommendation reads RAM from /proc/meminfo (or os.sysconf) and free disk
from shutil.disk_usage: psutil is not a dependency.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from newt.local.models import speeds
from newt.local.models.sampling import Sampling, parse_sampling
from newt.local.setup.split_model import WheelSplit, parse_split
from newt.resources import asset_text

CATALOGUE_FILE = "local_models.toml"
# The model gets at most this share of the machine's RAM: the rest is the
# system's, the terminal's and whatever else is open.
RAM_SHARE = 0.5
DISK_MARGIN_BYTES = 1_000_000_000  # a full disk breaks more than the download
SHA256 = re.compile(r"[0-9a-f]{64}")
NAME = re.compile(r"[a-z0-9][a-z0-9.\-]*")


@dataclass(frozen=True)
class CatalogueModel:
    """One downloadable chat model: a single GGUF file in a hub repository."""

    name: str  # what `newt --local NAME` takes
    title: str
    repo: str
    revision: str
    filename: str
    licence: str
    size_bytes: int
    ram_bytes: int
    context_tokens: int
    about: str
    sha256: str | None = None
    pypi: WheelSplit | None = None  # also on a package index, in parts
    prompt_tokens_per_s: int | None = None  # measured on 2 cores
    reply_tokens_per_s: int | None = None
    licence_file: str | None = None  # in assets/, copied beside the model
    sampling: Sampling | None = None  # the publisher's, as newt's server's defaults

    @property
    def url_path(self) -> str:
        return f"{self.repo}/resolve/{self.revision}/{self.filename}"

    def speed_here(self, cores: int | None = None, speeds_dir: Path | None = None) -> str | None:
        """What the model did on this machine the last time it ran here ('read 62,
        wrote 14 tokens/s here on 6 Dec', from speeds.json in `speeds_dir`); else the
        catalogue's 2-core measurement scaled to this machine's cores (up to 8:
        beyond that memory bandwidth rules), saying so; None when neither exists."""
        here = speeds.measured(speeds_dir, self.filename) if speeds_dir is not None else None
        if here is not None:
            day = time.strftime("%-d %b", time.localtime(here.at))
            return f"read {here.read:.0f}, wrote {here.write:.0f} tokens/s here on {day}"
        if not (self.prompt_tokens_per_s and self.reply_tokens_per_s):
            return None
        scale = min(max(1, cores or os.cpu_count() or 1), 8) / 2
        read, write = self.prompt_tokens_per_s * scale, self.reply_tokens_per_s * scale
        return f"~{read:.0f} read, ~{write:.0f} written tokens/s on an idle machine like this"


def parse_catalogue(text: str) -> list[CatalogueModel]:
    """The models of a catalogue file; ValueError names the first entry that is wrong.

    Strict on purpose: a typo in a size or a checksum would otherwise show up as
    a refused download on someone else's machine.
    """
    data = tomllib.loads(text)
    entries = data.get("model")
    if not isinstance(entries, list) or not entries:
        raise ValueError("the catalogue has no [[model]] entries")
    required = {
        "name": str, "title": str, "repo": str, "revision": str, "filename": str,
        "licence": str, "size_bytes": int, "ram_bytes": int, "context_tokens": int, "about": str,
    }  # fmt: skip
    models: list[CatalogueModel] = []
    for i, entry in enumerate(entries):
        where = f"model {i + 1} ({entry.get('name', '?')})"
        for key, kind in required.items():
            if not isinstance(entry.get(key), kind) or isinstance(entry.get(key), bool):
                raise ValueError(f"{where}: {key} must be a {kind.__name__}")
        optional = {
            "sha256", "pypi", "prompt_tokens_per_s", "reply_tokens_per_s", "licence_file",
            "sampling",
        }  # fmt: skip
        unknown = set(entry) - set(required) - optional
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
        for key in ("prompt_tokens_per_s", "reply_tokens_per_s"):
            value = entry.get(key)
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise ValueError(f"{where}: {key} must be a positive int")
        if "pypi" in entry:
            if not isinstance(entry.get("sha256"), str):
                raise ValueError(f"{where}: a model joined from PyPI parts needs its sha256")
            entry = {**entry, "pypi": parse_split(entry["pypi"], where)}
        if "sampling" in entry:
            entry = {**entry, "sampling": parse_sampling(entry["sampling"], where)}
        sha = entry.get("sha256")
        if sha is not None and not (isinstance(sha, str) and SHA256.fullmatch(sha)):
            raise ValueError(f"{where}: sha256 must be 64 lowercase hex digits")
        if not NAME.fullmatch(entry["name"]):
            raise ValueError(f"{where}: name must be lowercase letters, digits, '.' and '-'")
        if entry["repo"].count("/") != 1 or not entry["filename"].endswith(".gguf"):
            raise ValueError(f"{where}: repo must be owner/name and filename a .gguf")
        if min(entry["size_bytes"], entry["ram_bytes"], entry["context_tokens"]) <= 0:
            raise ValueError(f"{where}: sizes must be positive")
        if entry["ram_bytes"] < entry["size_bytes"]:
            raise ValueError(f"{where}: ram_bytes is less than the file it loads")
        models.append(CatalogueModel(**entry))
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        raise ValueError("two catalogue models share a name")
    return models


@cache
def catalogue() -> tuple[CatalogueModel, ...]:
    """The shipped catalogue, smallest first (the order of the data file)."""
    return tuple(parse_catalogue(asset_text(CATALOGUE_FILE)))


def find(name: str) -> CatalogueModel | None:
    """The catalogue model called `name` (case-insensitive), if any."""
    wanted = name.strip().lower()
    return next((m for m in catalogue() if m.name == wanted), None)


# -- this machine ---------------------------------------------------------------------


def machine_ram_bytes(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """Total RAM: MemTotal from /proc/meminfo, else os.sysconf; None when neither says."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def free_disk_bytes(path: Path) -> int | None:
    """Free bytes on the filesystem that holds `path` (or its nearest existing parent)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        return shutil.disk_usage(probe).free
    except OSError:
        return None


def fits(model: CatalogueModel, ram: int | None, disk: int | None) -> bool:
    """Whether `model` can run in RAM_SHARE of `ram` and be stored in `disk` (None: unknown)."""
    ram_ok = ram is None or model.ram_bytes <= ram * RAM_SHARE
    disk_ok = disk is None or model.size_bytes + DISK_MARGIN_BYTES <= disk
    return ram_ok and disk_ok


def recommend(
    ram: int | None, disk: int | None, models: tuple[CatalogueModel, ...] | None = None
) -> CatalogueModel | None:
    """The largest model that fits this RAM and disk; None when none does.

    Largest because the point of the catalogue is a model that holds a
    conversation; with RAM unknown the smallest, which runs almost anywhere.
    """
    models = models if models is not None else catalogue()
    if ram is None:
        small = [m for m in models if fits(m, None, disk)]
        return min(small, key=lambda m: m.ram_bytes) if small else None
    usable = [m for m in models if fits(m, ram, disk)]
    return max(usable, key=lambda m: m.ram_bytes) if usable else None


def gigabytes(n: int) -> str:
    """Bytes for a person: '2.5 GB', '930 MB'."""
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"
