"""`newt --incognito`: the TUI with the conversation it opens kept out of memory."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from newt.cli.memory.text import clean
from newt.config import Config
from newt.errors import describe

if TYPE_CHECKING:
    from newt.agent.own_memory.records import ForgetReport
    from newt.ui.app import NewtApp
    from newt.ui.session_api import SessionLike


def run_tui_incognito(
    config: Config, *, resume: str | None, continue_latest: bool, preset: str | None
) -> int:
    """`newt --incognito` (with -c/-r too): the TUI as `run_tui` runs it, with
    the conversation it opens kept out of memory before the first turn."""
    import asyncio

    app = incognito_app(
        config, resume=resume, continue_latest=continue_latest, preset=preset,
        freeze_startup_heap=True,
    )  # fmt: skip

    async def main() -> None:
        try:
            await app.run_async()
        finally:
            await app.aclose()

    asyncio.run(main())
    return app.return_code or 0


def incognito_app(config: Config, **kw: Any) -> NewtApp:
    """A NewtApp (same arguments) that turns incognito on once the requested
    conversation is open; a resumed one loses what was indexed of it, and a
    notification says so. Why a subclass: the app's startup is the UI's own
    (newt/ui/app.py), and incognito must be on before the first turn is sent."""
    import inspect
    from pathlib import Path

    from newt.ui.app import NewtApp

    class IncognitoApp(NewtApp):
        # Textual reads a relative CSS_PATH beside the class's own module: keep the UI's
        CSS_PATH = str(Path(inspect.getfile(NewtApp)).with_name(str(NewtApp.CSS_PATH)))

        async def _open_requested_conversation(self, session: SessionLike) -> None:
            await super()._open_requested_conversation(session)
            try:
                report = await session.forgetting.set_incognito(True)
            except Exception as exc:  # the chat goes on; the user must know it is not incognito
                self.notify(describe(exc), title="Incognito is off", severity="error", markup=False)
                return
            self.notify(incognito_notice(report), title="Incognito", markup=False)

    return IncognitoApp(config, **kw)


def incognito_notice(report: ForgetReport | None) -> str:
    """What `--incognito` says it did: a resumed conversation's removed records."""
    text = (
        "Nothing of this conversation is saved (nor of the ones /new starts);"
        " what you send still goes to the model's server."
    )
    if report is not None:
        text += " What was stored of it is deleted: " + clean(report.describe())
    return text
