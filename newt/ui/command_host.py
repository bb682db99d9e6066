"""What slash commands and palette entries need from the screen that runs them.

The chat screen implements this; commands.py and chat_commands.py depend on
the protocol only, so neither imports the screen (and no import cycle forms).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.worker import Worker

    from newt.ui.commands import ParsedCommand, SlashCommand
    from newt.ui.session_api import SessionLike
    from newt.ui.widgets.chat_log import ChatLog
    from newt.ui.widgets.evidence import EvidenceSidebar


class CommandHost(Protocol):
    session: SessionLike
    busy: bool

    @property
    def app(self) -> Any: ...

    @property
    def log_view(self) -> ChatLog: ...
    @property
    def sidebar(self) -> EvidenceSidebar: ...
    def feedback(self, text: str, level: str = "feedback") -> None: ...
    @property
    def notify(self) -> Any: ...  # Textual's DOMNode.notify
    def refresh_header(self) -> None: ...
    def refresh_meter(self) -> None: ...
    def load_conversation(self) -> Worker[None]: ...
    def toggle_sidebar(self) -> None: ...
    def toggle_thinking(self) -> None: ...
    def palette_command(self, command: SlashCommand) -> None: ...
    def run_command(self, parsed: ParsedCommand) -> None: ...
    def send(self, text: str, mode: str | None = None) -> bool: ...
    def edit_prompt(self, text: str) -> None: ...
    @property
    def run_worker(self) -> Any: ...  # Textual's DOMNode.run_worker
