"""The local models the first-run screen offers, as the UI may use them.

The UI imports only the agent layer (docs/design.md section 1); this view
hands it the chat GGUFs found on this machine, the download catalogue with
the recommendation for this machine, and one call that makes a choice
runnable (llama-server built if missing, the model downloaded if missing),
reporting progress as the SmolLM2 setup does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from newt.errors import describe
from newt.local.models.catalogue import (
    catalogue,
    find,
    fits,
    free_disk_bytes,
    gigabytes,
    machine_ram_bytes,
    recommend,
)
from newt.local.models.discover import discover, hub_cache_dir
from newt.local.models.download import DownloadError, Transfer, cached_path, download
from newt.local.models.sources import reachable
from newt.local.setup import Progress, ProgressFn, SetupError, build_llama_server, cache_dir

FETCH_LATER = (
    "A stronger model can be fetched later: `newt --local --list` shows them and where "
    "each can come from, `newt --local NAME` downloads one and runs it."
)
RECOMMENDED = " (recommended here)"


@dataclass(frozen=True)
class LocalChoice:
    """One line of the first-run screen: a model found here, or one to download."""

    label: str
    detail: str
    path: Path | None = None  # a found model, or a catalogue model already downloaded
    catalogue_name: str | None = None
    recommended: bool = False

    @property
    def remembered(self) -> tuple[str, str]:
        """(`[backend] local_model`, its comment): a catalogue model by name, a found
        one by its file (no later start has to search the disk for it)."""
        if self.catalogue_name:
            return self.catalogue_name, self.label.removesuffix(RECOMMENDED)
        return str(self.path or ""), self.label


def local_choices() -> list[LocalChoice]:
    """Models found on this machine first, then the catalogue (the recommended one marked);
    never raises: a machine with nothing to offer gets the catalogue alone."""
    choices = [
        LocalChoice(m.name, f"{gigabytes(m.size_bytes)}, found in {m.source}", path=m.path)
        for m in discover()
    ]
    ram, disk = machine_ram_bytes(), free_disk_bytes(hub_cache_dir())
    sources = reachable()
    best = recommend(ram, disk, tuple(m for m in catalogue() if sources.can_fetch(m)))
    for model in catalogue():
        here = cached_path(model)
        source = sources.where(model)
        if here:
            size = "downloaded"
        elif source:
            size = f"download {gigabytes(model.size_bytes)} {source}"
        else:
            size = "cannot be downloaded from here (no model hub answers)"
        fit = "" if fits(model, ram, disk) else ", too big for this machine"
        speed = model.speed_here(speeds_dir=cache_dir())
        detail = (
            f"{size}, needs {gigabytes(model.ram_bytes)} RAM"
            f"{', ' + speed if speed else ''}, {model.licence}{fit}: {model.about}"
        )
        is_best = best is not None and best.name == model.name
        label = model.title + (RECOMMENDED if is_best else "")
        choices.append(LocalChoice(label, detail, here, model.name, is_best))
    return choices


def prepare_choice(choice: LocalChoice, progress: ProgressFn) -> tuple[Path, Path]:
    """(llama-server, GGUF) for a choice: the model downloaded if it is not here yet,
    llama-server built if missing. Raises SetupError (SetupCancelled from `progress`)."""
    model_path = choice.path
    if model_path is None:
        model = find(choice.catalogue_name or "")
        if model is None:
            raise SetupError(f"{choice.label} is not in the catalogue.")

        def report(t: Transfer) -> None:
            progress(Progress("model", t.describe(model.title), t.fraction, t.eta_s))

        try:
            model_path = download(model, progress=report)
        except DownloadError as exc:
            raise SetupError(
                f"{describe(exc)}\nWith no network, SmolLM2-135M-Instruct (Run a local model "
                f"on this machine) works offline. {FETCH_LATER}"
            ) from exc
    return build_llama_server(progress=progress), model_path
