"""A widget showing Markdown blocks from lines rendered ahead of time.

Textual gets finished strips, so appending to a long reply does not render or
lay out its earlier blocks again; the blocks' markdown-it tokens are dropped
once rendered (a resize parses their source again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

from newt.ui.widgets.markdown_blocks import Block
from newt.ui.widgets.markdown_render import (
    Line,
    background_lock,
    bare,
    render_blocks,
    render_blocks_async,
    strip_of,
)


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
