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

The lines live in line widgets (`RenderedLines`) that hand Textual finished
strips, so appending to a long reply does not render or lay out its earlier
blocks again. They are kept packed (`Line`: text runs and style numbers, in
tuples the garbage collector stops tracking) and become Textual strips only
when painted: a Strip with its caches is a dozen tracked objects, an 8,000-token
reply kept ~50,000 of them, and every full collection walked them all
(pauses of 80-170 ms after three such replies, which is what delayed keys).
The markdown-it tokens of a block are dropped once it is rendered, for the
same reason (a resize parses the block's source again).

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
import copy
import threading
import time
import weakref
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rich.console import Console, ConsoleOptions
from rich.markdown import Markdown as RichMarkdown
from rich.segment import Segment
from rich.style import Style
from textual.constants import MAX_FPS
from textual.containers import Vertical
from textual.strip import Strip
from textual.widget import Widget

from newt.ui.widgets.markdown_blocks import Block, MarkdownBlocks, parse

FRAME = 1 / MAX_FPS
DUTY = 3  # a pass and its repaint take at most 1/DUTY of the time (the rest is input's)
AWAY_POLL = 0.25  # how often a paused stream checks whether the user came back
# Rich's Markdown with the options HistoryMarkdown uses; copies of it take the
# tokens the split already has (a new RichMarkdown builds a parser and parses).
_TEMPLATE = RichMarkdown("", hyperlinks=False)


Line = tuple[tuple[str, int], ...]
"""One rendered line: (text, style number) runs; see `strip_of`."""

# Every style a line has used, numbered. Few distinct styles exist (the theme's
# Markdown styles under the message's base style), so the table stays small.
_STYLES: list[Style | None] = []
_STYLE_NUMBERS: dict[Style | None, int] = {}
_STYLES_LOCK = threading.Lock()  # blocks may render in the worker thread too


def _style_number(style: Style | None) -> int:
    number = _STYLE_NUMBERS.get(style)
    if number is None:
        with _STYLES_LOCK:
            number = _STYLE_NUMBERS.get(style)
            if number is None:
                number = len(_STYLES)
                _STYLES.append(style)
                _STYLE_NUMBERS[style] = number
    return number


def pack(segments: Iterable[Segment]) -> Line:
    return tuple((segment.text, _style_number(segment.style)) for segment in segments)


def strip_of(line: Line) -> Strip:
    """The Textual strip of a packed line."""
    return Strip([Segment(text, _STYLES[number]) for text, number in line])


def bare(block: Block) -> Block:
    """The block without its parse (kept for a re-render at another width)."""
    return Block(block.source, block.gap) if block.tokens else block


def _markdown(block: Block) -> RichMarkdown:
    markdown = copy.copy(_TEMPLATE)
    markdown.markup = block.source
    markdown.parsed = list(block.tokens) if block.tokens else parse(block.source)
    return markdown


def render_block(
    block: Block, width: int, base: Style, console: Console, options: ConsoleOptions
) -> list[Line]:
    """Rich's rendering of one Markdown block, as lines at most `width` cells wide.

    The same as a Static showing `RichMarkdown(text)` (`HistoryMarkdown`): the
    base style goes under every segment, as Textual does for Rich renderables.
    """
    lines: list[Line] = [()] if block.gap else []
    segments = console.render(_markdown(block), options.update_width(width))
    styled = (Segment(text, base + style if style else base) for text, style, _ in segments)
    for line in Segment.split_and_crop_lines(styled, width, include_new_lines=False, pad=False):
        lines.append(pack(line))
    return lines


def render_blocks(
    blocks: Iterable[Block], width: int, base: Style, console: Console, options: ConsoleOptions
) -> list[Line]:
    lines: list[Line] = []
    for block in blocks:
        lines += render_block(block, width, base, console, options)
    return lines


BIG_BLOCK = 3000  # characters of one block worth rendering off the event loop
_RENDERER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="newt-markdown")


SLICE = 0.004  # seconds of rendering after which input gets a real turn
BREATH = 0.002  # how long that turn lasts at least
# Re-renders of text already shown or held above it (a burst's older blocks, a
# resize) take turns, one at a time per event loop, and leave at least a
# third of the time to everything else.
_BACKGROUND: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary()
)


def background_lock() -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    lock = _BACKGROUND.get(loop)
    if lock is None:
        lock = _BACKGROUND[loop] = asyncio.Lock()
    return lock


async def render_blocks_async(
    blocks: Iterable[Block],
    width: int,
    base: Style,
    console: Console,
    options: ConsoleOptions,
    *,
    background: bool = False,
) -> list[Line]:
    """`render_blocks`, giving the event loop turns as it goes.

    A key goes through several message queues (driver, app, screen, widget)
    before it is painted, each hop one turn of the event loop; a bare
    `sleep(0)` after every block let a block render between every two hops.
    Instead, once a slice of time is spent, the loop gets a real pause in
    which the whole chain runs; `background` work pauses half as long as it ran.
    """
    loop = asyncio.get_running_loop()
    lines: list[Line] = []
    started = time.monotonic()
    for block in blocks:
        if len(block.source) > BIG_BLOCK:
            args = (block, width, base, console, options)
            lines += await loop.run_in_executor(_RENDERER, render_block, *args)
        else:
            lines += render_block(block, width, base, console, options)
        spent = time.monotonic() - started
        if spent >= SLICE:
            await asyncio.sleep(max(BREATH, spent / 2) if background else BREATH)
            started = time.monotonic()
    return lines


WARM_UP = """# Warm up

Text with **bold**, `code` and a [link](http://example.com).

- a list

```python
def f(x):
    return x
```

| a | b |
|---|---|
| 1 | 2 |
"""


def warm_up(console: Console, options: ConsoleOptions) -> None:
    """Render a sample once, off the event loop, so the first reply does not pay
    for the imports (pygments lexers, Rich's syntax and table modules)."""
    blocks = MarkdownBlocks()
    rendered = blocks.feed(WARM_UP) + blocks.finish()
    render_blocks(rendered, 80, Style(), console, options)


class RenderedLines(Widget):
    """Markdown blocks shown from lines rendered ahead of time.

    At a new width (a resize) the blocks are rendered again from their source:
    at once if they are short, else block by block while the old lines stay
    up, so a resize never blocks input. `deferred` holds blocks back (height 0)
    until `release()`.
    """

    DEFAULT_CSS = """
    RenderedLines {
        width: 1fr;
        height: auto;
    }
    """

    SYNC_RENDER = 2000  # characters of source worth rendering in one go

    def __init__(self, blocks: Iterable[Block] = (), *, deferred: bool = False) -> None:
        super().__init__()
        self.blocks: list[Block] = list(blocks)
        self.lines: list[Line] = []
        self.deferred = deferred
        self._was_held = deferred
        self._width = 0  # the width `lines` were rendered at (0: not rendered)
        self._base: Style | None = None
        self._target = 0  # the width a re-render in flight is rendering at
        self._rerender: asyncio.Task[None] | None = None

    def release(self) -> None:
        """Render deferred blocks now."""
        if self.deferred:
            self.deferred = False
            self.refresh(layout=True)

    def show(self, blocks: list[Block], lines: list[Line], width: int, base: Style) -> None:
        """Replace everything (lines rendered at `width`)."""
        # Same height (the usual case: words added to the last line): a repaint
        # of this widget alone, no layout of the log.
        layout = len(lines) != len(self.lines)
        self.blocks, self.lines = [bare(b) for b in blocks], lines
        self._width, self._base = width, base
        self.refresh(layout=layout)

    def extend(self, blocks: list[Block], lines: list[Line], width: int, base: Style) -> None:
        """Append blocks and their lines (rendered at `width`)."""
        if not blocks:
            return
        if not self.blocks and self._rerender is None:
            self.show(blocks, lines, width, base)  # a new chunk takes the lines as they are
            return
        self.blocks += [bare(b) for b in blocks]
        if (width, base) == (self._width, self._base) and self._rerender is None:
            self.lines += lines
            self.refresh(layout=True)
        else:
            self._width = -1  # lines no longer match the blocks: render them again
            self._ensure(self.content_size.width or width)

    def _ensure(self, width: int) -> None:
        if self.deferred or width <= 0 or width == self._width or width == self._target:
            return
        # Lines already up stay (cropped) while new ones render block by block:
        # the log's scrollbar appearing must not stall a frame. Held blocks of
        # a burst always render that way (several chunks may be released at once).
        small = sum(len(b.source) for b in self.blocks) <= self.SYNC_RENDER
        if not self.lines and not self._was_held and small:
            app = self.app
            options = app.console_options.update(highlight=False)
            base = self.rich_style
            self.lines = render_blocks(self.blocks, width, base, app.console, options)
            self.blocks = [bare(b) for b in self.blocks]
            self._width, self._base = width, base
        else:
            self._target = width
            if self._rerender is None:
                self._rerender = asyncio.create_task(self._render_again())

    async def _render_again(self) -> None:
        try:
            async with background_lock():  # the chunks of a burst render one after another
                await self._render_again_now()
        finally:
            self._rerender, self._target = None, 0

    async def _render_again_now(self) -> None:
        while True:
            width, count, base = self._target, len(self.blocks), self.rich_style
            app = self.app
            console, options = app.console, app.console_options.update(highlight=False)
            lines = await render_blocks_async(
                self.blocks[:count], width, base, console, options, background=True
            )
            if (width, count) == (self._target, len(self.blocks)):
                self.lines, self._width, self._base = lines, width, base
                self.blocks = [bare(b) for b in self.blocks]
                self.refresh(layout=True)
                return

    def on_unmount(self) -> None:
        if self._rerender is not None:
            self._rerender.cancel()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        # Only a changed base style (a theme) needs new lines; a class change on
        # the message (streaming -> complete) must not re-render the reply.
        if self._base is not None and self.is_mounted and self.rich_style != self._base:
            self._width = -1
            self.refresh(layout=True)

    def get_content_height(self, container: Any, viewport: Any, width: int) -> int:
        self._ensure(width)
        return len(self.lines)

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        self._ensure(width)
        if y < len(self.lines):
            return strip_of(self.lines[y]).crop(0, width)
        return Strip.blank(width, self._base)


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
        if self.content_size.width > 0:
            return self.content_size.width
        # Just mounted, not laid out yet: as wide as the message holding it.
        parent = self.parent
        width = parent.content_size.width if isinstance(parent, Widget) else 0
        return max(1, width)

    def _scrolled_away(self) -> bool:
        for node in self.ancestors:
            away = getattr(node, "scrolled_away", None)
            if callable(away):
                return bool(away())
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
