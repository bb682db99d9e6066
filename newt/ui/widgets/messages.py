"""One widget per log entry.

Assistant replies stream into `StreamingMarkdown` (one per text segment),
which renders each Markdown block once it is final and, when the stream ends,
only the last block again. Replies from history render through Rich's
Markdown in one widget (`HistoryMarkdown`); both read the same.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Collapsible, Static

from newt.ui.format import clean, one_line
from newt.ui.widgets.entries import (
    AssistantEntry,
    CompactionEntry,
    Entry,
    ErrorEntry,
    NoticeEntry,
    ToolCallEntry,
    UserEntry,
)
from newt.ui.widgets.log_host import LogHost
from newt.ui.widgets.message_keys import MESSAGE_BINDINGS, MessageKeys
from newt.ui.widgets.reply_parts import ThinkingBlock, footer_text, pace_text

if TYPE_CHECKING:
    from textual.timer import Timer

    from newt.agent.display import ReplyStats
    from newt.agent.events import ReplyPace
    from newt.ui.widgets.streaming_markdown import StreamingMarkdown

STOP_HINT = "… Esc or ctrl+c stops the reply"  # the status line of a reply while it streams
TOOL_TEXT_LIMIT = 4000  # a huge tool result would cost layout time for no reader benefit
PACE_TICK_S = 0.5  # the wait for a first token is counted on the status line this often


class MessageFork(Message):
    """The fork key on a focused message: fork the conversation at its turn."""

    def __init__(self, entry: Entry) -> None:
        super().__init__()
        self.entry = entry


FORK_BINDING = Binding("f", "fork_here", "Fork here")


class UserMessage(MessageKeys, Static, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [*MESSAGE_BINDINGS, FORK_BINDING]
    copy_label = "your message"

    def __init__(self, entry: UserEntry) -> None:
        super().__init__(Content(entry.text), classes="message user")
        self.entry = entry

    def copy_source(self) -> str:
        return self.entry.text

    def action_fork_here(self) -> None:
        self.post_message(MessageFork(self.entry))


class NoticeMessage(Static):
    def __init__(self, entry: NoticeEntry) -> None:
        super().__init__(Content(entry.text), classes=f"message notice -{entry.level}")
        self.entry = entry


class FoldLine(MessageKeys, Static, can_focus=True):
    """The quiet line where turns were folded into the summary ("6 earlier
    turns folded into the summary · turns 1–6"). Enter or a click opens what
    the summary says and which turns it covers (`FoldScreen`). Why a line:
    folding takes words out of what the model sees, so it is never silent."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open the fold"),
        *MESSAGE_BINDINGS,
    ]
    copy_label = "the summary"

    def __init__(self, entry: CompactionEntry) -> None:
        super().__init__(classes="message compaction fold")
        self.entry = entry
        self.tooltip = "Enter or click: the summary and the turns it covers"
        self.show_fold()

    def show_fold(self) -> None:
        """Render the entry's line again (its fold was filled in)."""
        self.update(Content(f"╌ {self.entry.line}"))  # Content: never parsed as markup

    def copy_source(self) -> str:
        return self.entry.summary

    def on_click(self) -> None:
        self.action_open()

    def action_open(self) -> None:
        from newt.ui.screens.record import FoldScreen  # brings the agent's views

        log = self.parent  # the chat log: it reads the conversation's folds
        load = log.load_folds if isinstance(log, LogHost) else None
        self.app.push_screen(FoldScreen(self.entry, load))


class ErrorMessage(Horizontal):
    """An inline error; Retry sends the same text again."""

    class RetryRequested(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, entry: ErrorEntry) -> None:
        super().__init__(classes="message error")
        self.entry = entry

    def compose(self) -> ComposeResult:
        yield Static(Content(f"✖ {self.entry.message}"), classes="error-text")
        if self.entry.retry_text is not None:
            yield Button("Retry", variant="warning", compact=True, classes="retry")

    @on(Button.Pressed, ".retry")
    def _retry(self, event: Button.Pressed) -> None:
        event.stop()
        if self.entry.retry_text is not None:
            self.post_message(self.RetryRequested(self.entry.retry_text))


def _tool_title(call: ToolCallEntry) -> str:
    marks = {"running": "…", "done": "✓", "error": "✖"}
    args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
    return f"{marks[call.state]} {call.name}({one_line(args, 60)})"


def _tool_body(call: ToolCallEntry) -> str:
    args = json.dumps(call.arguments, indent=2, ensure_ascii=False)
    result = "(running)" if call.result is None else clean(call.result)
    if len(result) > TOOL_TEXT_LIMIT:
        result = result[:TOOL_TEXT_LIMIT] + f"\n… ({len(call.result or '') - TOOL_TEXT_LIMIT} more)"
    return f"arguments:\n{args}\n\nresult:\n{result}"


class ToolCallBlock(Collapsible):
    """A compact, expandable record of one tool call."""

    def __init__(self, call: ToolCallEntry) -> None:
        self.call = call
        self._body = Static(Content(_tool_body(call)), classes="tool-body")
        # Content, not str: a str title is parsed as markup, and the arguments come
        # from the model ("[@click=app.quit]" would become a live action link)
        title: Any = Content(_tool_title(call))
        super().__init__(self._body, title=title, collapsed=True, classes="tool")
        self.set_class(call.error, "-error")

    def refresh_call(self) -> None:
        title: Any = Content(_tool_title(self.call))
        self.title = title
        self._body.update(Content(_tool_body(self.call)))
        self.set_class(self.call.error, "-error")


class HistoryMarkdown(Static):
    """Markdown of a finished reply rebuilt from history, as one widget.

    Textual's Markdown widget mounts a child per block, and styling those is
    what makes opening a long conversation slow; Rich renders the same text
    into a single widget. Live replies stream through `StreamingMarkdown`,
    which renders with the same Rich Markdown block by block.
    """

    def __init__(self, text: str) -> None:
        # Imported here: Rich's Markdown and its parser are not needed to show
        # the prompt, and startup should not wait for them.
        from rich.markdown import Markdown as RichMarkdown

        super().__init__(RichMarkdown(text, hyperlinks=False), classes="history-md")
        self.source = text


class AssistantMessage(MessageKeys, Vertical, can_focus=True):
    """A reply: its thinking, Markdown segments interleaved with tool-call
    blocks, and a footer with its token counts."""

    BINDINGS: ClassVar[list[BindingType]] = [*MESSAGE_BINDINGS, FORK_BINDING]
    copy_label = "the reply"

    def action_fork_here(self) -> None:
        self.post_message(MessageFork(self.entry))

    def __init__(self, entry: AssistantEntry) -> None:
        super().__init__(classes="message assistant")
        self.entry = entry
        self._stream: StreamingMarkdown | None = None
        self._status = Static("", classes="status")
        self._footer = Static("", classes="reply-footer", markup=False)
        self.thinking = ThinkingBlock(entry.thinking, live=entry.status == "streaming")
        self._pace: tuple[ReplyPace, float] | None = None
        self._pace_timer: Timer | None = None

    def copy_source(self) -> str:
        return self.entry.text

    def compose(self) -> ComposeResult:
        yield self.thinking
        for part in self.entry.parts:
            if isinstance(part, str):
                yield HistoryMarkdown(part)
            else:
                yield ToolCallBlock(part)
        yield self._status
        yield self._footer
        self._show_status()

    def _show_status(self) -> None:
        labels = {"interrupted": "⏹ interrupted", "failed": "✖ failed", "streaming": STOP_HINT}
        self._status.update(labels.get(self.entry.status, ""))
        self._status.display = self.entry.status != "complete"
        for status in ("streaming", "interrupted", "failed"):
            self.set_class(self.entry.status == status, f"-{status}")
        stats = self.entry.stats
        self._footer.display = stats is not None and self.entry.status != "streaming"
        if stats is not None:
            self._footer.update(footer_text(stats))

    def show_pace(self, pace: ReplyPace) -> None:
        """How the request is going (the prompt being read, then the reply's pace), on
        the status line while the reply streams; a timer counts the wait between
        reports until the first token."""
        self._pace = pace, time.monotonic()
        if pace.first_token_s is None and self._pace_timer is None:
            self._pace_timer = self.set_interval(PACE_TICK_S, self._show_pace)
        elif pace.first_token_s is not None and self._pace_timer is not None:
            self._pace_timer.stop()
            self._pace_timer = None
        self._show_pace()

    def _show_pace(self) -> None:
        if self._pace is None or self.entry.status != "streaming":
            return
        pace, at = self._pace
        text = pace_text(pace, pace.waited_s + time.monotonic() - at)
        self._status.update(f"{text} {STOP_HINT}" if text else STOP_HINT)

    def write_thinking(self, text: str) -> None:
        """Append streamed reasoning to the thinking block."""
        if text:
            self.entry.thinking += text
            if self.entry.status == "streaming" and not self.thinking.live:
                self.thinking.live = True  # thinking again (after a tool call)
            self.thinking.append(text)

    async def write(self, text: str) -> None:
        """Append streamed text to the current Markdown segment."""
        if not text:
            return
        if self.thinking.live:
            # the answer has begun, so the thinking is over: fold it now, not
            # when the turn is stored, after the reply's last word
            self.thinking.finish()
        if self._stream is None:
            from newt.ui.widgets.streaming_markdown import StreamingMarkdown  # see HistoryMarkdown

            self.entry.parts.append("")
            self._stream = StreamingMarkdown()
            await self.mount(self._stream, before=self._status)
        last = self.entry.parts[-1]
        assert isinstance(last, str)
        self.entry.parts[-1] = last + text
        self._stream.write(text)  # rendered with the next frame, not awaited

    async def _close_segment(self) -> None:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.finish()  # renders only the last block again

    async def start_tool(self, call: ToolCallEntry) -> None:
        await self._close_segment()
        self.entry.parts.append(call)
        await self.mount(ToolCallBlock(call), before=self._status)

    def finish_tool(self, call_id: str, result: str, error: bool) -> None:
        for block in self.query(ToolCallBlock):
            if block.call.call_id == call_id and block.call.result is None:
                block.call.result = result
                block.call.error = error
                block.refresh_call()
                return

    async def finish(
        self,
        status: str,
        reply: str | None = None,
        *,
        thinking: str | None = None,
        stats: ReplyStats | None = None,
    ) -> None:
        """End the stream; `reply` and `thinking` (the session's final text) win."""
        if self._pace_timer is not None:
            self._pace_timer.stop()
            self._pace_timer = None
        await self._close_segment()
        if thinking is not None:
            self.entry.thinking = thinking
        self.entry.stats = stats or self.entry.stats
        self.thinking.finish(self.entry.thinking)
        if reply is not None and reply != self.entry.text:
            # The session's final reply is the truth (e.g. after a retry):
            # show it as one segment after any tool calls.
            parts: list[str | ToolCallEntry] = [
                p for p in self.entry.parts if not isinstance(p, str)
            ]
            if reply:
                parts.append(reply)
            self.entry.parts = parts
            await self.query_children("StreamingMarkdown, HistoryMarkdown").remove()
            if reply:
                await self.mount(HistoryMarkdown(reply), before=self._status)
        self.entry.status = status
        self._show_status()


EntryWidget = UserMessage | AssistantMessage | FoldLine | ErrorMessage | NoticeMessage
"""The widget that shows one entry of the log (its `entry`)."""


def widget_for(entry: Entry) -> EntryWidget:
    if isinstance(entry, UserEntry):
        return UserMessage(entry)
    if isinstance(entry, AssistantEntry):
        return AssistantMessage(entry)
    if isinstance(entry, CompactionEntry):
        return FoldLine(entry)
    if isinstance(entry, ErrorEntry):
        return ErrorMessage(entry)
    return NoticeMessage(entry)
