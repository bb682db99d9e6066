"""The conversation log: anchored to the bottom, windowed for long histories.

A Markdown widget costs layout time on every refresh, and a log of a thousand
of them takes seconds per layout. So the log keeps every *entry* but mounts
widgets for only the newest `WINDOW` of them while the user follows the
bottom; scrolling to the top mounts the previous `BATCH` entries back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, cast

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from newt.ui.widgets.entries import CompactionEntry, Entry, UserEntry
from newt.ui.widgets.log_host import LogHost
from newt.ui.widgets.messages import EntryWidget, FoldLine, widget_for
from newt.ui.widgets.reply_parts import ThinkingBlock

if TYPE_CHECKING:
    from newt.agent.display import FoldView, HistoryEntry

History = Callable[[], Awaitable[Sequence["HistoryEntry"]]]

WINDOW = 80  # widgets kept mounted while following the bottom
BATCH = 30  # entries mounted per step when the user scrolls to the top
INITIAL = 16  # entries mounted when a conversation opens: about a screenful, fast
WARM_UP_AFTER = 1.0  # seconds after mounting (startup is done) to warm up the Markdown renderer


class ChatLog(VerticalScroll, LogHost, can_focus=True):
    # The scrollbar's column is always kept: a reply that grows past the first
    # screenful would otherwise narrow every message by it, and each would
    # render its Markdown again at the new width in the middle of the stream.
    DEFAULT_CSS = """
    ChatLog {
        scrollbar-gutter: stable;
    }
    """

    class WarmedUp(Message):
        """The Markdown renderer is warmed up (startup is over): NewtApp's
        `startup_settled` runs again, and the startup heap leaves GC."""

    def __init__(self, *, id: str | None = None, history: History | None = None) -> None:
        """`history`: the conversation's durable log (the session's `history`),
        read to tell which turns a fold took and whether its summary is written."""
        super().__init__(id=id)
        self.history = history
        self.entries: list[Entry] = []
        self._first = 0  # index in `entries` of the first mounted entry
        self._loading_earlier = False
        self._earlier = Static("", classes="earlier")
        self.thinking_expanded = False
        """Thinking blocks show unfolded (ctrl+t); blocks mounted later follow."""

    def compose(self) -> ComposeResult:
        yield self._earlier

    def on_mount(self) -> None:
        self.anchor()
        self._update_earlier()
        # After the first frames (the prompt is usable), in a thread.
        self.set_timer(WARM_UP_AFTER, self._warm_up)

    async def _warm_up(self) -> None:
        # Also imports Rich's Markdown and markdown-it off the event loop, which
        # startup leaves out (see HistoryMarkdown).
        from newt.ui.widgets.markdown_render import warm_up

        options = self.app.console_options.update(highlight=False)
        await asyncio.to_thread(warm_up, self.app.console, options)
        self.post_message(self.WarmedUp())

    def toggle_thinking(self) -> bool:
        """Fold or unfold every thinking block; returns the new state."""
        self.thinking_expanded = not self.thinking_expanded
        for block in self.query(ThinkingBlock):
            block.set_expanded(self.thinking_expanded)
        return self.thinking_expanded

    @property
    def first_mounted(self) -> int:
        return self._first

    def _entry_widgets(self) -> list[Widget]:
        return [child for child in self.children if child is not self._earlier]

    def _update_earlier(self) -> None:
        self._earlier.display = self._first > 0
        if self._first:
            self._earlier.update(
                Content(f"↑ {self._first} earlier message(s) · scroll up to load them")
            )

    def following(self) -> bool:
        """True while the user has not scrolled away from the bottom."""
        return self.max_scroll_y - self.scroll_y <= 1

    def scrolled_away(self) -> bool:
        """The user moved up: a streaming reply below waits instead of re-laying out.

        The anchor is released only by the user's scrolling, never by content
        growing under it, so a burst of text cannot make the log look "away".
        """
        return self.is_anchored and self._anchor_released

    async def append(self, entry: Entry) -> Widget:
        following = self.following()
        self.entries.append(entry)
        widget = widget_for(entry)
        await self.mount(widget)
        if following:
            await self._trim()
            self.scroll_end(animate=False, immediate=True)
        if isinstance(entry, CompactionEntry) and entry.fold is None and self.history:
            self.run_worker(self.resolve_folds(), group="log-folds", exit_on_error=False)
        return widget

    async def load_folds(self) -> list[FoldView] | None:
        """The conversation's folds as its durable log has them now (None: no log)."""
        if self.history is None:
            return None
        from newt.agent.display import fold_views  # loaded with the agent (see format.clean)

        return fold_views(await self.history())

    async def resolve_folds(self) -> None:
        """Fill in the fold of each line shown live (a turn's fold or /compact):
        the event names the record, not which turns it took. A line matches
        the newest record with its summary; a record a reloaded history shows
        already drops the line (it would show the fold twice)."""
        folds = await self.load_folds()
        if not folds:
            return
        shown = {e.fold.row_id for e in self.entries if isinstance(e, CompactionEntry) and e.fold}
        taken: set[int] = set()
        from newt.ui.format import clean

        for entry in list(reversed(self.entries)):
            if not isinstance(entry, CompactionEntry) or entry.fold is not None:
                continue
            match = next(
                (
                    f
                    for f in reversed(folds)
                    if f.row_id not in taken and clean(f.summary) == entry.summary
                ),
                None,
            )
            if match is None:
                continue
            taken.add(match.row_id)
            widget = next((w for w in self.query(FoldLine) if w.entry is entry), None)
            if match.row_id in shown:
                if widget is not None:
                    await self.discard(widget)
                else:  # scrolled out of the window, above it
                    at = next((i for i, e in enumerate(self.entries) if e is entry), None)
                    if at is not None:
                        self._first -= at < self._first
                        del self.entries[at]
                        self._update_earlier()
                continue
            entry.fold = match
            if widget is not None:
                widget.show_fold()

    async def discard(self, widget: EntryWidget) -> None:
        """Drop a widget and its entry (e.g. an empty reply whose turn failed)."""
        self.entries = [e for e in self.entries if e is not widget.entry]
        await widget.remove()

    async def drop_last_turn(self) -> None:
        """Take the last turn (its prompt and all after it) off the view (regenerate, edit)."""
        last = max(
            (i for i, e in enumerate(self.entries) if isinstance(e, UserEntry)), default=None
        )
        if last is not None:
            await self.replace_all(self.entries[:last])

    async def replace_all(self, entries: Iterable[Entry]) -> None:
        """Show `entries` instead: the mounted widgets whose entries are unchanged
        stay, the rest are replaced in one frame. A regenerate or a reload after
        one would otherwise blank the whole log for a frame."""
        new = list(entries)
        first = self._first
        if not (first <= len(new) and len(new) - first <= WINDOW):
            first = max(0, len(new) - INITIAL)
        mounted = self._entry_widgets()
        kept = 0
        if first == self._first:
            for widget, entry in zip(mounted, new[first:], strict=False):
                shown = cast("EntryWidget", widget).entry
                if shown != entry:
                    break
                new[first + kept] = shown  # the widget and the log share one entry
                kept += 1
        with self.app.batch_update():
            if kept < len(mounted):
                await self.remove_children(mounted[kept:])
            self.entries = new
            self._first = first
            widgets = [widget_for(e) for e in new[first + kept :]]
            if widgets:
                await self.mount_all(widgets)
            self._update_earlier()
        self.anchor()
        # Replacing the children may reset the scroll offset to the top, which
        # must not count as the user asking for earlier messages.
        self._loading_earlier = True
        self.call_after_refresh(self._settle)

    def _settle(self) -> None:
        self.scroll_end(animate=False, immediate=True)
        self._loading_earlier = False

    async def _trim(self) -> None:
        mounted = self._entry_widgets()
        excess = len(mounted) - WINDOW
        if excess > 0:
            await self.remove_children(mounted[:excess])
            self._first += excess
            self._update_earlier()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        # max_scroll_y is 0 during a relayout; a clamp to the top then is not the user.
        if new_value <= 1 < old_value and self.max_scroll_y > 0 and self._first > 0:
            self.load_earlier()

    def load_earlier(self) -> None:
        if not self._loading_earlier:
            self._loading_earlier = True
            self.run_worker(self._load_earlier(), group="log-earlier", exit_on_error=False)

    async def _load_earlier(self) -> None:
        try:
            start = max(0, self._first - BATCH)
            mounted = self._entry_widgets()
            widgets = [widget_for(e) for e in self.entries[start : self._first]]
            if widgets:
                await self.mount_all(widgets, after=self._earlier)
            self._first = start
            self._update_earlier()
            if mounted:
                # Keep the message the user was reading where it was.
                self.call_after_refresh(
                    self.scroll_to_widget, mounted[0], top=True, animate=False, immediate=True
                )
        finally:
            self._loading_earlier = False
