"""Chat GGUFs already on this machine, found where the usual tools keep them, never copied.

Three places: the Hugging Face cache (models--*/snapshots/*/*.gguf, the
layout huggingface_hub and llama.cpp's -hf write), LM Studio's models folder
(~/.lmstudio/models, older ~/.cache/lm-studio/models), and Ollama's store,
whose model blobs are GGUF files named by digest behind JSON manifests
(~/.ollama/models or $OLLAMA_MODELS). Embedding-only models and vision
projectors are left out by reading each file's GGUF header (gguf.py). Why:
people who chat with local models often have several gigabytes of them
already; offering those first saves a download.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from newt.local.models.gguf import read_info

OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
SHARD = re.compile(r"-(\d{5})-of-\d{5}\.gguf$")
MAX_DEPTH = 4  # LM Studio: publisher/repo/file.gguf; a little more is tolerated


@dataclass(frozen=True)
class FoundModel:
    """A chat GGUF on this machine: where it is, and what to call it."""

    name: str  # e.g. "Qwen/Qwen3-4B-GGUF/Qwen3-4B-Q4_K_M.gguf", "llama3.2:3b"
    path: Path
    size_bytes: int
    source: str  # "Hugging Face cache", "LM Studio", "Ollama"
    architecture: str


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache: $HF_HUB_CACHE, else $HF_HOME/hub, else
    $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub (read per call,
    so a test or a shell that changes them is honoured)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "huggingface" / "hub"


def lmstudio_dirs() -> list[Path]:
    home = Path.home()
    return [home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"]


def ollama_dir() -> Path:
    env = os.environ.get("OLLAMA_MODELS")
    return Path(env).expanduser() if env else Path.home() / ".ollama" / "models"


def discover() -> list[FoundModel]:
    """Every chat GGUF in the three places, each file once (the first name found wins)."""
    seen: set[Path] = set()
    found: list[FoundModel] = []
    for name, path, source in (*_hub_cache(), *_lmstudio(), *_ollama()):
        try:
            real = path.resolve(strict=True)
            size = real.stat().st_size
            info = read_info(real)
        except (OSError, ValueError):  # gone, unreadable or not a GGUF: skipped
            continue
        if real in seen or info.is_embedding:
            continue
        seen.add(real)
        found.append(FoundModel(name, path, size, source, info.architecture))
    return found


def _first_shard(name: str) -> bool:
    match = SHARD.search(name)
    return match is None or int(match.group(1)) == 1


def _hub_cache() -> Iterator[tuple[str, Path, str]]:
    root = hub_cache_dir()
    for repo_dir in sorted(root.glob("models--*")):
        repo = repo_dir.name.removeprefix("models--").replace("--", "/", 1)
        for path in sorted(repo_dir.glob("snapshots/*/**/*.gguf")):
            if _first_shard(path.name):
                yield f"{repo}/{path.name}", path, "Hugging Face cache"


def _lmstudio() -> Iterator[tuple[str, Path, str]]:
    for root in lmstudio_dirs():
        if not root.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            depth = len(Path(dirpath).relative_to(root).parts)
            if depth >= MAX_DEPTH:
                dirnames.clear()
            dirnames.sort()
            for filename in sorted(filenames):
                if filename.endswith(".gguf") and _first_shard(filename):
                    path = Path(dirpath) / filename
                    if not filename.lower().startswith("mmproj"):
                        yield str(path.relative_to(root)), path, "LM Studio"


def _ollama() -> Iterator[tuple[str, Path, str]]:
    root = ollama_dir()
    manifests = root / "manifests"
    if not manifests.is_dir():
        return
    for manifest in sorted(p for p in manifests.rglob("*") if p.is_file()):
        try:
            layers = json.loads(manifest.read_text(encoding="utf-8")).get("layers", [])
        except (OSError, ValueError, AttributeError):
            continue
        digest = next(
            (
                layer.get("digest", "")
                for layer in layers
                if isinstance(layer, dict) and layer.get("mediaType") == OLLAMA_MODEL_LAYER
            ),
            "",
        )
        if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
            continue
        yield (
            _ollama_name(manifest.relative_to(manifests)),
            root / "blobs" / digest.replace(":", "-"),
            "Ollama",
        )


def _ollama_name(rel: Path) -> str:
    """host/namespace/model/tag -> "model:tag" for the library, else "host/ns/model:tag"."""
    parts = rel.parts
    if len(parts) < 2:
        return str(rel)
    prefix, model, tag = parts[:-2], parts[-2], parts[-1]
    if tuple(prefix) == ("registry.ollama.ai", "library"):
        return f"{model}:{tag}"
    return "/".join([*prefix, model]) + f":{tag}"
