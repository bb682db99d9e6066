"""Markdown blocks rendered with Rich into packed lines, off the event loop's critical path.

A line is kept packed (`Line`: text runs and style numbers, in tuples the
garbage collector stops tracking) and becomes a Textual strip only when
painted (`strip_of`): a Strip with its caches is a dozen tracked objects, an
8,000-token reply kept ~50,000 of them, and every full collection walked them
all (pauses of 80-170 ms after three such replies, which is what delayed keys).
`render_blocks_async` gives the event loop real turns as it goes, and renders
a single big block in one worker thread.
"""

from __future__ import annotations

import asyncio
import copy
import threading
import time
import weakref
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from rich.console import Console, ConsoleOptions
from rich.markdown import Markdown as RichMarkdown
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from newt.ui.widgets.markdown_blocks import Block, MarkdownBlocks, parse

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
