"""The first-run choice "Run a local model on this machine", as the UI may use it.

The UI imports only the agent layer (docs/design.md); this module hands it the
backend's local setup (fetch SmolLM2-135M-Instruct, build llama-server, with
progress) and a managed llama-server for the rest of the app's life.
"""

from __future__ import annotations

from pathlib import Path

from newt.backend.local_server import LocalLlamaServer, reply_token_cap
from newt.backend.local_setup import (
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
    "plan",
    "start_local_server",
]


async def start_local_server(binary: Path, model: Path) -> LocalLlamaServer:
    """llama-server on a free loopback port, ready to answer; the caller stops it.

    Replies are capped at the reserve newt keeps free for them. Call it on the
    event loop's thread: the server dies with that thread (PR_SET_PDEATHSIG).
    """
    server = LocalLlamaServer(model, binary=binary, extra_args=["-n", str(reply_token_cap())])
    await server.astart()
    return server
