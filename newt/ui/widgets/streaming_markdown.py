"""A reply's Markdown while it streams: what is final is rendered once.

Text written to the widget waits in a buffer; one render pass per frame
(`FRAME`, Textual's frame rate) takes the whole buffer, so a burst of deltas
costs one pass, and a costly pass spaces out the next ones (`DUTY`). A pass
splits off the blocks that became final (`MarkdownBlocks`), renders them once
with Rich into lines that are kept, and renders only the open tail again.
Rendering yields to the event loop after every block, so keys, scrolling
and repaints go first; a single big block (a long code listing) renders in
one worker thread instead. (Whole passes in a thread measured no better on
a 2-core machine: the event loop then waits for the GIL at every step.)

The lines live in line widgets (`rendered_lines.RenderedLines`) that hand
Textual finished strips, so appending to a long reply does not render or lay
out its earlier blocks again; they are kept packed, not as strips
(`markdown_render.Line`), so the garbage collector does not walk them.

When a burst brings more than a screenful at once, the pass
renders the newest screenful first and leaves the older blocks to a
`RenderedLines` of their own that renders them once the burst is over (the
next pass without a backlog, or the end): the user sees the bottom, where the
reply is, without waiting for text above.
While the user has scrolled up in the log, passes wait (the text keeps
arriving) until the log follows the bottom again or the stream ends. When it
ends, the last pass settles the tail: only the last, possibly cut, block is
rendered again, never the whole reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from rich.console import Console, ConsoleOptions
from rich.style import Style
from textual.constants import MAX_FPS
from textual.containers import Vertical
from textual.widget import Widget

from newt.ui.widgets.log_host import LogHost
from newt.ui.widgets.markdown_blocks import Block, MarkdownBlocks
from newt.ui.widgets.markdown_render import Line, render_blocks_async
from newt.ui.widgets.rendered_lines import RenderedLines

FRAME = 1 / MAX_FPS
DUTY = 3  # a pass and its repaint take at most 1/DUTY of the time (the rest is input's)
AWAY_POLL = 0.25  # how often a paused stream checks whether the user came back


class _Pass:
    """What one render pass produced."""

    def __init__(self) -> None:
        self.older: list[Block] = []  # settled, left for later
        self.recent: list[Block] = []  # settled and rendered
        self.recent_lines: list[Line] = []
        self.live: list[Block] = []
        self.live_lines: list[Line] = []


class StreamingMarkdown(Vertical):
    """One Markdown segment of a reply, fed as it streams; `finish()` ends it."""

    DEFAULT_CSS = """
    StreamingMarkdown {
        height: auto;
    }
    """

    def __init__(self) -> None:
        super().__init__(classes="streaming-md")
        self._blocks = MarkdownBlocks()
        self._settled = RenderedLines()  # the chunk new settled blocks go to
        self._held: list[RenderedLines] = []  # older blocks of a burst, not rendered yet
        self.live = RenderedLines()
        self._pending: list[str] = []
        self._wake = asyncio.Event()
        self._ended = asyncio.Event()  # cuts short the pause between passes
        self._ending = False
        self._task: asyncio.Task[None] | None = None

    def compose(self) -> Any:
        yield self._settled
        yield self.live

    @property
    def chunks(self) -> list[RenderedLines]:
        """The widgets holding the settled blocks, in order."""
        return [c for c in self.query_children(RenderedLines) if c is not self.live]

    def on_mount(self) -> None:
        self._task = asyncio.create_task(self._run())

    def on_unmount(self) -> None:
        if self._task is not None and not self._ending:
            self._task.cancel()

    def write(self, text: str) -> None:
        """Queue text; it is on screen by the next frame."""
        if text:
            self._pending.append(text)
            self._wake.set()

    async def finish(self) -> None:
        """Render what is left and stop; returns once the reply is final on screen."""
        self._ending = True
        self._wake.set()
        self._ended.set()
        if self._task is not None:
            await self._task

    def _width(self) -> int:
        # Just mounted, not laid out yet (nor, under load, the message holding
        # it): as wide as the nearest ancestor that is. Width 1 drew a frame of
        # the reply one letter a line, pushing the conversation off screen.
        for node in (self, *self.ancestors):
            if isinstance(node, Widget) and node.content_size.width > 0:
                return node.content_size.width
        return max(1, self.app.size.width)

    def _scrolled_away(self) -> bool:
        for node in self.ancestors:
            if isinstance(node, LogHost):
                return node.scrolled_away()
        return False

    async def _run(self) -> None:
        full: list[str] = []  # the whole text, for the rare reference-link case
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._scrolled_away() and not self._ending:
                await asyncio.sleep(AWAY_POLL)  # nothing off screen is laid out meanwhile
            started = time.monotonic()
            ending = self._ending
            text = "".join(self._pending)
            self._pending.clear()
            full.append(text)
            width, base = self._width(), self.live.rich_style
            app = self.app
            console, options = app.console, app.console_options.update(highlight=False)
            screenful = max(app.size.height, 10)
            done = await self._render_pass(text, ending, width, base, console, options, screenful)
            if done.older:
                # Older blocks of a burst wait above what is shown.
                self._held.append(RenderedLines(done.older, deferred=True))
                self._settled = RenderedLines()
                await self.mount(self._held[-1], self._settled, before=self.live)
            elif self._held:
                for held in self._held:
                    held.release()  # the burst is over: render what it skipped
                self._held.clear()
            self._settled.extend(done.recent, done.recent_lines, width, base)
            if ending and not self._pending:
                if self._blocks.has_references:
                    # A [label]: url definition changes how earlier blocks read,
                    # so this reply is rendered once more as a whole.
                    await self.query_children(RenderedLines).remove()
                    await self.mount(RenderedLines([Block("".join(full), False)]))
                else:
                    await self.live.remove()
                    for held in self._held:
                        held.release()
                return
            self.live.show(done.live, done.live_lines, width, base)
            await self._pause(started)

    async def _pause(self, started: float) -> None:
        """Wait for the repaint, then long enough that rendering stays a fraction of the time.

        At most one pass per frame; a pass that took long (a big code block
        as the tail, a busy machine) spaces out the next ones instead of
        leaving no time for keys. The end of the stream cuts the pause short.
        """
        painted = asyncio.Event()
        self.call_after_refresh(painted.set)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(painted.wait(), 1.0)
        cost = time.monotonic() - started
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ended.wait(), max(FRAME, DUTY * cost) - cost)

    async def _render_pass(
        self,
        text: str,
        ending: bool,
        width: int,
        base: Style,
        console: Console,
        options: ConsoleOptions,
        screenful: int,
    ) -> _Pass:
        """Split off final blocks, render them and the tail.

        Settled blocks are rendered newest first until a screenful of lines
        is ready; any older ones are handed back unrendered.
        """
        done = _Pass()
        settled = self._blocks.feed(text)
        if ending:
            settled += self._blocks.finish()
        tail = self._blocks.tail
        if tail.strip():
            done.live = [Block(tail, self._blocks.tail_gap)]
            done.live_lines = await render_blocks_async(done.live, width, base, console, options)
        shown = len(done.live_lines)
        rendered: list[list[Line]] = []
        while settled and shown < screenful:
            rendered.append(await render_blocks_async(settled[-1:], width, base, console, options))
            shown += len(rendered[-1])
            done.recent.insert(0, settled.pop())
        done.older = settled
        done.recent_lines = [line for lines in reversed(rendered) for line in lines]
        return done
