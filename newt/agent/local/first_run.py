"""The first-run choice "Run a local model on this machine", as the UI may use it.

The UI imports only the agent layer (docs/design.md); this module hands it the
backend's local setup (fetch SmolLM2-135M-Instruct, build llama-server, with
progress); agent/local/managed_server.py owns the managed llama-server for the rest of
the app's life.
Recall by meaning embeds in process (recall/embedder.py); only with
`[recall] embeddings = "server"` do `newt --local` and the first-run choice run
a second, small llama-server with all-MiniLM-L6-v2 (local_embeddings_server).
"""

from __future__ import annotations

from newt.config import Config
from newt.local.server import LocalLlamaServer, embeddings_server, reply_token_cap
from newt.local.setup import (
    Plan,
    Progress,
    ProgressFn,
    SetupCancelled,
    SetupError,
    ensure_local_model,
    plan,
)

__all__ = [
    "LocalLlamaServer",
    "Plan",
    "Progress",
    "ProgressFn",
    "SetupCancelled",
    "SetupError",
    "ensure_local_model",
    "local_embeddings_server",
    "plan",
    "reply_token_cap",
    "start_local_embeddings",
    "use_local_embeddings",
]


def local_embeddings_server(config: Config) -> LocalLlamaServer | None:
    """The embeddings server to run beside a local chat model, not yet started.

    Only for `[recall] embeddings = "server"` with no `embeddings_url` of its own
    and the MiniLM GGUF in the cache (scripts/get_llama_server.sh makes it): by
    default recall embeds with the same model in process, no second server.
    """
    if config.recall.embeddings != "server" or config.recall.embeddings_url:
        return None
    return embeddings_server()


async def start_local_embeddings(config: Config) -> LocalLlamaServer | None:
    """MiniLM beside a local chat model, started and set as this run's recall
    embeddings; None when there is none to start (local_embeddings_server).
    Raises LocalServerError when it does not start: recall then goes by words.
    Call it on the event loop's thread (the server dies with that thread)."""
    server = local_embeddings_server(config)
    if server is None:
        return None
    await server.astart()
    use_local_embeddings(config, server)
    return server


def use_local_embeddings(config: Config, server: LocalLlamaServer) -> None:
    """Point this run's recall at the managed embeddings server.

    Its port changes every run, so the vectors' space is named after the model
    alone: the next `newt --local` finds the vectors of this one.
    """
    config.recall.embeddings_url = server.base_url
    config.recall.embedding_model = server.model_name
    config.embedding_space = f"newt --local {server.model_name}"
