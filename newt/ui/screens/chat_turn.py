"""One turn on the chat screen: the prompt in the log, the reply streaming into
its message, and what the end leaves (a fold line, an inline error, the words
put back in the prompt).

The chat screen runs `run_turn` in its exclusive "turn" worker; cancelling that
worker (Esc) cancels the pump inside the session's generator, and the session
keeps the partial reply as interrupted. Imported with the agent (the first
frame needs none of it); the screen reaches it through TurnHost, so this module
never imports the screen.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, Protocol, cast

from newt.agent import events as ev
from newt.ui.errors import describe
from newt.ui.format import clean
from newt.ui.screens.turn_modes import turn_events
from newt.ui.screens.turn_stream import END, Outcome, coalesce, pump
from newt.ui.widgets.entries import (
    AssistantEntry,
    CompactionEntry,
    ErrorEntry,
    ToolCallEntry,
    UserEntry,
    compaction_summary,
)
from newt.ui.widgets.messages import AssistantMessage

if TYPE_CHECKING:
    from textual.worker import Worker

    from newt.ui.session_api import SessionLike
    from newt.ui.widgets.chat_log import ChatLog
    from newt.ui.widgets.evidence import EvidenceSidebar
    from newt.ui.widgets.prompt import PromptBar


class TurnHost(Protocol):
    """What a turn needs of the screen it runs on (ChatScreen)."""

    @property
    def session(self) -> SessionLike: ...
    @property
    def log_view(self) -> ChatLog: ...
    @property
    def sidebar(self) -> EvidenceSidebar: ...
    @property
    def prompt(self) -> PromptBar: ...
    @property
    def notify(self) -> Any: ...  # Textual's DOMNode.notify
    @property
    def call_later(self) -> Any: ...  # Textual's MessagePump.call_later
    def set_busy(self, busy: bool) -> None: ...
    def refresh_header(self) -> None: ...
    def refresh_meter(self) -> None: ...
    def load_conversation(self) -> Worker[None]: ...


async def run_turn(screen: TurnHost, text: str, mode: str | None = None) -> None:
    """Send `text` (`mode` "regenerate" or "edit": the turn replaces the last one)
    and show the reply as it streams; the screen is busy until it ends."""
    log = screen.log_view
    outcome = Outcome()
    view: AssistantMessage | None = None
    queue: asyncio.Queue[Any] = asyncio.Queue()
    pumping: asyncio.Task[None] | None = None
    try:
        if mode is not None:
            await log.drop_last_turn()  # the history reloads when the new one is stored
        await log.append(UserEntry(text))
        view = cast(AssistantMessage, await log.append(AssistantEntry()))
        pumping = asyncio.create_task(pump(turn_events(screen.session, text, mode), queue))
        while True:
            item = await queue.get()
            if item is END:
                break
            if isinstance(item, Exception):
                raise item
            # Deltas that queued up while we rendered go out as one write.
            items = [item]
            while not queue.empty():
                items.append(queue.get_nowait())
            for event in coalesce(items):
                if event is END:
                    queue.put_nowait(END)
                    break
                if isinstance(event, Exception):
                    raise event
                await show_event(screen, view, event, outcome)
        if outcome.error is not None:
            outcome.status = "failed"
        await view.finish(
            outcome.status,
            None if outcome.error else outcome.reply,
            thinking=outcome.thinking,
            stats=outcome.stats,
        )
    except asyncio.CancelledError:
        if view is not None:
            await view.finish("interrupted")
        screen.notify("Stopped. The partial reply is kept.", timeout=3)
        raise
    except Exception as exc:
        if view is not None:
            await view.finish("failed")
        outcome.error = ev.TurnError(describe(exc), retryable=True, kind=type(exc).__name__)
    finally:
        if pumping is not None and not pumping.done():
            # Cancelling the pump delivers the cancellation inside the
            # session's generator, which then keeps the partial reply.
            pumping.cancel()
            with contextlib.suppress(BaseException):
                await pumping
        screen.set_busy(False)
        screen.refresh_header()
        screen.refresh_meter()
        if mode is not None:
            screen.load_conversation()  # shows what is now the conversation
    await after_turn(screen, text if mode != "regenerate" else "", view, outcome)


async def show_event(
    screen: TurnHost, view: AssistantMessage, event: Any, outcome: Outcome
) -> None:
    """One of the session's events, on screen or kept in `outcome` for the end."""
    if isinstance(event, ev.TextDelta):
        await view.write(clean(event.text))
    elif isinstance(event, ev.ThinkingDelta):
        view.write_thinking(clean(event.text))
    elif isinstance(event, ev.ReplyPace):
        view.show_pace(event)
    elif isinstance(event, ev.ToolCallStarted):
        await view.start_tool(ToolCallEntry(event.call_id, event.name, event.arguments))
    elif isinstance(event, ev.ToolCallFinished):
        view.finish_tool(event.call_id, event.result, event.error)
    elif isinstance(event, ev.UsageReported):
        screen.refresh_meter()
    elif isinstance(event, ev.RetainedEvidence):
        screen.sidebar.show(event.report)
    elif isinstance(event, ev.Compacted):
        outcome.compactions.append(event)
    elif isinstance(event, ev.Notice):
        screen.notify(clean(event.message), title="newt", markup=False)
    elif isinstance(event, ev.TurnError):
        outcome.error = event
    elif isinstance(event, ev.TurnDone):
        outcome.status, outcome.reply = event.status, clean(event.reply)
        outcome.thinking, outcome.stats = clean(event.thinking), event.stats
        screen.refresh_header()  # the first message gave the conversation its title


async def after_turn(
    screen: TurnHost, text: str, view: AssistantMessage | None, outcome: Outcome
) -> None:
    log = screen.log_view
    if view is not None and not view.entry.parts and outcome.status == "failed":
        await log.discard(view)
    for compacted in outcome.compactions:
        await log.append(
            CompactionEntry(compaction_summary(compacted.record), compacted.resident_turns)
        )
    if outcome.compactions:
        screen.notify("Older turns were folded into the summary.", timeout=4)
    if outcome.error is not None:
        turn_failed(screen, text, outcome.error)


def turn_failed(screen: TurnHost, text: str, error: ev.TurnError) -> None:
    message = clean(error.message)
    if error.kind == "NoAnswer":  # the words are stored as said: ask again in place
        message += "; ctrl+r asks again"
        text = ""
    screen.notify(message, title="The reply failed", severity="error", markup=False)
    screen.call_later(
        screen.log_view.append, ErrorEntry(message, text if error.retryable else None)
    )
    # The user's words are never lost: put them back if the prompt is free
    # (a failed regenerate has none: the old turn stays).
    if text and not screen.prompt.text.strip():
        screen.prompt.set_text(text)
