"""Before an MCP tool with approve = "ask" runs: show the call, wait for a choice.

The server, tool and arguments come from the model and an MCP server, so they
are shown as `Content` (never parsed as markup) after terminal escapes are
stripped. The screen dismisses with "once", "conversation" or "deny"; Esc
denies, so a stray key can never run a tool.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from newt.agent.tools.approval import ApprovalRequest, Decision
from newt.ui.format import clean


def call_summary(request: ApprovalRequest) -> Content:
    return Content.assemble(
        ("Server  ", "dim"),
        (clean(request.server), "bold"),
        "\n",
        ("Tool    ", "dim"),
        (clean(request.tool), "bold"),
        ("  (as " + clean(request.qualified) + ")", "dim"),
    )


class McpApprovalScreen(ModalScreen[Decision]):
    CSS_PATH = "mcp_approval.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "choose('once')", "Allow once"),
        Binding("c", "choose('conversation')", "Allow for this conversation"),
        Binding("d,escape", "choose('deny')", "Deny"),
    ]

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        with Vertical(id="panel") as panel:
            panel.border_title = "Run this tool?"
            panel.border_subtitle = "a allow · c allow for conversation · d/esc deny"
            yield Static(call_summary(self.request), id="approval-call")
            yield Static(Content("Arguments"), id="approval-args-label")
            with VerticalScroll(id="approval-args"):
                yield Static(Content(self.request.pretty_arguments()), id="approval-args-text")
            with Horizontal(id="approval-buttons"):
                yield Button("Allow once", variant="primary", id="once")
                yield Button("Allow for this conversation", id="conversation")
                yield Button("Deny", variant="error", id="deny")

    def on_mount(self) -> None:
        self.query_one("#deny", Button).focus()  # Enter on a fresh prompt must not run a tool

    def action_choose(self, decision: Decision) -> None:
        self.dismiss(decision)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id in ("once", "conversation", "deny"):
            self.dismiss(event.button.id)  # type: ignore[arg-type]


async def ask_approval(app: Any, request: ApprovalRequest) -> Decision:
    """Show the call and wait for the user's choice (awaited inside the turn);
    a cancelled turn closes the prompt, and closing it any other way denies."""
    decided: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()

    def done(decision: Decision | None) -> None:
        if not decided.done():
            decided.set_result(decision or "deny")

    screen = McpApprovalScreen(request)
    app.push_screen(screen, done)
    try:
        return await decided
    finally:
        if not decided.done() and screen.is_attached:  # the turn was cancelled
            screen.dismiss(None)
