"""What a machine has: model files where other apps keep them, and (in the tests)
no llama-server of its own to discover."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.support.fake_hub import COMMIT, write_gguf


def no_local_server() -> None:
    return None


def fake_machine(home: Path, tmp_path: Path) -> dict[str, Path]:
    """One chat and one embedding model in each of the HF cache, LM Studio and Ollama."""
    snap = tmp_path / "hf" / "hub" / "models--Qwen--Qwen3-4B-GGUF" / "snapshots" / COMMIT
    hf_chat = write_gguf(snap / "Qwen3-4B-Q4_K_M.gguf", "qwen3")
    write_gguf(tmp_path / "hf" / "hub" / "models--x--emb" / "snapshots" / COMMIT / "e.gguf",
               "nomic-bert")  # fmt: skip
    lms = home / ".lmstudio" / "models" / "lmstudio-community" / "Llama-3.2-3B-Instruct-GGUF"
    lms_chat = write_gguf(lms / "Llama-3.2-3B-Instruct-Q4_K_M.gguf", "llama")
    write_gguf(lms / "mmproj-model-f16.gguf", "clip")
    write_gguf(home / ".cache" / "lm-studio" / "models" / "a" / "b" / "bge.gguf", "bert")
    ollama = home / ".ollama" / "models"
    paths = {"hf": hf_chat, "lmstudio": lms_chat}
    for name, tag, arch in (
        ("llama3.2", "3b", "llama"),
        ("nomic-embed-text", "latest", "nomic-bert"),
    ):
        digest = os.urandom(32).hex()
        blob = write_gguf(ollama / "blobs" / f"sha256-{digest}", arch)
        manifest = ollama / "manifests" / "registry.ollama.ai" / "library" / name / tag
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps({"layers": [
            {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "0" * 64},
            {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}"},
        ]}))  # fmt: skip
        paths[name] = blob
    return paths
