"""/model when newt runs its own llama-server: the local models it knows, one step away.

The picker lists what `ManagedLocal.models()` knows (found on disk, catalogue
models already downloaded, SmolLM2) instead of the one model the server
serves; choosing one restarts the server with it (its window too), the session
switches to it with its ordinary `set_model` (budget re-resolved, the
conversation reloaded and going on), and the choice is remembered as
`[backend] local_model`. Why a module of its own: ModelCommands keeps the
backend's /model; this is the managed server's.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from newt.config import save_local_choice
from newt.config_paths import default_config_path
from newt.ui.format import tokens
from newt.ui.screens.choice_picker import Choice as PickerChoice

if TYPE_CHECKING:
    from newt.agent.local.managed_server import ManagedLocal
    from newt.ui.command_host import CommandHost
    from newt.ui.session_api import SessionLike

PICKER_TITLE = "Local models (newt restarts its llama-server with the one you pick)"


class RunsLocal(Protocol):
    """What /model asks of the app the chat screen runs in (NewtApp)."""

    local: ManagedLocal | None


def managed(screen: CommandHost) -> ManagedLocal | None:
    """The managed llama-server of this app, or None when newt talks to another server."""
    app: RunsLocal = screen.app
    return app.local


async def local_choices(local: ManagedLocal) -> list[PickerChoice]:
    """The picker's entries, the running one marked; the disk is read in a thread."""
    models = await asyncio.to_thread(local.models)
    return [PickerChoice(m.name, m.detail, local.is_running(m)) for m in models]


async def switch_local(screen: CommandHost, session: SessionLike, name: str) -> bool:
    """Run the local model called `name` (or a GGUF path) in the managed server's place;
    False when `name` is no local model (the caller treats it as a plain model name).
    Errors (it did not start: the old model runs again) reach the command's feedback."""
    local = managed(screen)
    if local is None:
        return False
    model = await asyncio.to_thread(local.find, name)
    if model is None:
        title = local.not_downloaded(name)
        if title is not None:
            hint = f"quit and run `newt --local {name}` (it downloads it, then runs it)"
            screen.feedback(f"{title} is not downloaded yet: {hint}.", "warning")
            return True
        return False
    if screen.busy:
        screen.feedback("/model waits until the reply finishes (Esc stops it).", "warning")
        return True
    if local.is_running(model):
        screen.feedback(f"{model.name} is running already.")
        return True
    screen.feedback(f"Starting {model.name} (llama-server restarts with it)…")
    await local.switch(model)
    await session.set_model(local.server.model_name)
    screen.refresh_header()
    screen.refresh_meter()
    saved = ""
    config: Any = local.config
    try:  # later runs start it again
        save_local_choice(config.path or default_config_path(), model.remember, model.about)
    except (OSError, ValueError) as exc:
        saved = f" The choice was not saved to the config file: {exc}"
    status: Any = session.memory_status()
    screen.feedback(
        f"Now running {model.name}, a window of {tokens(local.server.ctx)} tokens; memory "
        f"budget {tokens(status.budget)} tokens. The conversation goes on.{saved}"
    )
    return True
