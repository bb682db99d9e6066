"""The llama-server newt runs itself, and running another local model in its place.

`newt --local`, `[backend] local = true` and the first run's choice start one
managed llama-server; `ManagedLocal` owns it for the rest of the run, so /model
can list the local models newt knows (`known_local_models`: found on disk,
catalogue models already downloaded, SmolLM2) and switch to one in one step:
the server is restarted on the same port with that model and its window, so
the session's base URL stays valid and only its model changes (the session's
own `set_model`). Why a separate owner: the CLI and the app both start the
server, and the UI may only talk to the agent layer (docs/design.md).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from newt.backend.errors import LocalServerError
from newt.config import Config
from newt.local.chat_template import template_args
from newt.local.models.catalogue import catalogue, find, gigabytes
from newt.local.models.cli import window_for
from newt.local.models.discover import discover
from newt.local.models.download import cached_path
from newt.local.models.sampling import SMOLLM2_SAMPLING, Sampling
from newt.local.server import (
    DEFAULT_CTX,
    LocalLlamaServer,
    cache_dir,
    default_model_path,
    reply_token_cap,
)
from newt.local.warm import WarmLlamaServer

__all__ = [
    "SMOLLM2",
    "KnownModel",
    "ManagedLocal",
    "known_local_models",
    "managed_server",
    "model_sampling",
]

SMOLLM2 = "SmolLM2-135M-Instruct"
# llama-server reads a prompt this many tokens at a time (default 2,048 / 512): it
# reports its progress and notices a request that was stopped only between
# batches, so at the default a 1,500-token prompt showed no progress and kept
# the server busy ~28 s after Esc on 2 cores; at 256, a report every ~5 s and
# free again within one batch, reading as fast (docs/benchmarks.md)
PROMPT_BATCH_TOKENS = 256


@dataclass(frozen=True)
class KnownModel:
    """A local model /model offers: its name, its file and what the config keeps."""

    name: str
    path: Path
    detail: str
    remember: str  # `[backend] local_model` ("" is SmolLM2)
    about: str = ""  # its comment in the config file


def _same(a: Path, b: Path) -> bool:
    with contextlib.suppress(OSError):
        return a.resolve() == b.resolve()
    return a == b


def known_local_models() -> list[KnownModel]:
    """Catalogue models already downloaded, then the chat GGUFs found on disk (a
    downloaded catalogue file is listed once, by its catalogue name), then SmolLM2
    when its file is there. Reads the disk: call it off the event loop."""
    known: list[KnownModel] = []
    for model in catalogue():
        path = cached_path(model)
        if path is not None:
            detail = f"{model.title} · {gigabytes(model.size_bytes)} · {model.licence}"
            known.append(KnownModel(model.name, path, detail, model.name, model.title))
    for found in discover():
        if not any(_same(found.path, k.path) for k in known):
            detail = f"{gigabytes(found.size_bytes)} · found in {found.source}"
            known.append(KnownModel(found.name, found.path, detail, str(found.path), found.name))
    smol = default_model_path()
    if smol.is_file() and not any(_same(smol, k.path) for k in known):
        known.append(KnownModel(SMOLLM2, smol, "tiny, offline; answers short questions", ""))
    return known


def model_sampling(path: Path) -> Sampling | None:
    """The sampling published for the model in `path`: SmolLM2's for the default
    model, a catalogue model's (known by its file name) for one of those; None
    for any other file (the server's own defaults)."""
    if _same(path, default_model_path()):
        return SMOLLM2_SAMPLING
    return next((m.sampling for m in catalogue() if m.filename == path.name), None)


def managed_server(
    path: Path | None,
    *,
    binary: str | os.PathLike[str] | None = None,
    port: int | None = None,
    keep_alive_s: float = 0.0,
) -> LocalLlamaServer:
    """A managed llama-server for `path`, not yet started: SmolLM2 (None, or its file)
    with its small window, any other model with `window_for` it; replies capped at
    the reserve newt keeps free for them; the model's chat template corrected where
    it shows the model something to copy wrongly (newt.local.chat_template);
    sampled as the model's publisher recommends (`model_sampling`).
    `keep_alive_s` > 0: a warm one, shared with the next newt (newt.local.warm)."""
    ctx = DEFAULT_CTX if path is None or _same(path, default_model_path()) else window_for(path)
    cap = reply_token_cap(ctx)
    batch = str(PROMPT_BATCH_TOKENS)
    template = template_args(path or default_model_path(), cache_dir())
    sampling = model_sampling(path or default_model_path())
    args = ["-n", str(cap), "-b", batch, "-ub", batch, *template]
    args += sampling.server_args() if sampling is not None else []
    if keep_alive_s > 0:
        return WarmLlamaServer(
            path, ctx=ctx, binary=binary, port=port, extra_args=args, keep_alive_s=keep_alive_s
        )
    return LocalLlamaServer(path, ctx=ctx, binary=binary, port=port, extra_args=args)


def _serve(config: Config, server: LocalLlamaServer, model: str | None = None) -> None:
    config.backend.base_url = server.base_url
    config.backend.model = model or server.model_name
    config.api_key = None  # our own llama-server needs no key; never send one
    config.server_context_tokens = server.ctx
    config.server_reply_cap = reply_token_cap(server.ctx)
    sampling = model_sampling(server.model_path)
    config.server_sampling = sampling.values() if sampling is not None else {}


class ManagedLocal:
    """Owns the running managed server; `switch` runs another model in its place.

    `config` is pointed at whichever server runs (base URL, model name, its
    window and reply cap), as the CLI's and the app's start did before.
    """

    def __init__(
        self,
        server: LocalLlamaServer,
        config: Config,
        *,
        known: Callable[[], list[KnownModel]] = known_local_models,
        model: str | None = None,
    ) -> None:
        self.server = server
        self.config = config
        self._known = known
        _serve(config, server, model)

    @classmethod
    async def start(
        cls, config: Config, path: Path | None, *, binary: str | os.PathLike[str] | None = None
    ) -> ManagedLocal:
        """Start the server for `path` on the event loop's thread (it dies with that
        thread: PR_SET_PDEATHSIG) and own it. Raises LocalServerError."""
        server = managed_server(path, binary=binary, keep_alive_s=config.backend.local_keep_alive)
        await server.astart()
        return cls(server, config)

    def models(self) -> list[KnownModel]:
        """What /model lists; the running model is always among them."""
        try:
            known = self._known()
        except Exception:  # an unreadable folder must not hide the list
            known = []
        if not any(_same(k.path, self.server.model_path) for k in known):
            path = self.server.model_path
            known.insert(0, KnownModel(path.stem, path, "running now", str(path), path.name))
        return known

    def is_running(self, model: KnownModel) -> bool:
        return _same(model.path, self.server.model_path)

    def find(self, name: str, models: list[KnownModel] | None = None) -> KnownModel | None:
        """The known model called `name`, or a GGUF file at that path; None otherwise."""
        models = self.models() if models is None else models
        for model in models:
            if model.name == name:
                return model
        path = Path(name).expanduser()
        if path.suffix.lower() == ".gguf" and path.is_file():
            absolute = str(path.resolve())
            return KnownModel(path.stem, path, "a GGUF file", absolute, path.name)
        return None

    def not_downloaded(self, name: str) -> str | None:
        """A catalogue model's title when `name` is one that is not downloaded yet
        (/model does not download: the server would go on running the old model
        under the new name), else None."""
        model = find(name)
        return model.title if model is not None and cached_path(model) is None else None

    async def switch(self, model: KnownModel) -> None:
        """Stop the server and start `model` on the same port (the base URL stays;
        a warm one's model gets a port of its own), with its window; `config`
        follows. If it does not start, the model that ran
        before is started again and LocalServerError says why. Call it on the event
        loop's thread, with no request in flight."""
        old = self.server
        keep = self.config.backend.local_keep_alive
        warm = isinstance(old, WarmLlamaServer)
        # a warm server may be another newt's too: it stays, and the new one gets a port
        new = managed_server(
            model.path, binary=old.binary, port=None if warm else old.port, keep_alive_s=keep
        )
        if isinstance(old, WarmLlamaServer):
            old.stop(now=True)  # unless another newt uses it
        else:
            old.stop()
        try:
            await new.astart()
        except LocalServerError:
            again = managed_server(old.model_path, binary=old.binary,
                                   port=None if warm else old.port, keep_alive_s=keep)  # fmt: skip
            await again.astart()
            self.server = again
            _serve(self.config, again)
            raise
        self.server = new
        _serve(self.config, new)

    def stop(self) -> None:
        """Stop whichever server runs now. Safe to call twice."""
        self.server.stop()
