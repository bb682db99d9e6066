"""Split a growing Markdown reply into settled blocks and an open tail.

A streamed reply only ever changes at its end. Once a later top-level block
has started on a complete line, every block before it is final (CommonMark
never reopens a closed block), so it can be rendered once and kept. Only the
tail, from the start of the last block, is parsed again as text arrives, and
only complete lines decide where blocks end: a half-received line such as "#"
or "```" may still turn out to continue the paragraph above it.

Blocks are rendered one by one with Rich's Markdown, the renderer of history
replies (`HistoryMarkdown`). Rich puts a blank line before a top-level block
when the element it closed last before the block's end asks for one (all but
a horizontal rule or an image). A block rendered alone starts from "no" and
may get that line from its own nested elements (a list's items); `gap` is
the blank line the block needs on top of its own render, so the blocks put
together read exactly as the whole reply rendered at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.token import Token
from rich.markdown import Markdown as RichMarkdown

# The parser rich.markdown.Markdown builds, so block boundaries agree with it.
_PARSER = MarkdownIt().enable("strikethrough").enable("table")
# Tokens Rich's render loop handles without closing an element.
_NO_ELEMENT = {"text", "hardbreak", "softbreak", "link_open", "link_close", "html_inline"}
_NO_NEW_LINE = {"hr", "image"}  # HorizontalRule and ImageItem: new_line = False


@dataclass(frozen=True)
class Block:
    source: str
    gap: bool  # a blank line to put before the block's own render
    tokens: tuple[Token, ...] = field(default=(), compare=False, repr=False)
    """The block's tokens from the split, so rendering need not parse it again."""


def _flatten(tokens: Iterable[Token]) -> Iterator[Token]:
    """The token order of Rich's render loop (inline children, but not images/fences)."""
    for token in tokens:
        if token.children and not (token.type == "fence" or token.tag == "img"):
            yield from _flatten(token.children)
        else:
            yield token


def _new_line_after(token: Token, state: bool) -> bool:
    """Rich's `new_line` after the loop has handled `token`."""
    if token.type in _NO_ELEMENT or token.nesting == 1:
        return state
    if token.tag in RichMarkdown.inlines and token.type not in ("fence", "code_block"):
        return state  # inline styles (em, strong, code, s) are not elements
    if token.nesting == -1:
        return True  # every element with an opening tag asks for a new line
    return token.type not in _NO_NEW_LINE


def _top_level(tokens: list[Token]) -> list[list[Token]]:
    """Tokens grouped by top-level block."""
    blocks: list[list[Token]] = []
    for token in tokens:
        if token.level == 0 and token.nesting >= 0:
            blocks.append([token])
        elif blocks:
            blocks[-1].append(token)
    return blocks


class MarkdownBlocks:
    """Feed text as it arrives; collect the blocks that became final."""

    def __init__(self) -> None:
        self._tail = ""  # text from the start of the last, still open, block
        self._new_line = False  # Rich's state after the settled blocks
        self._tail_gap = False
        self.has_references = False  # a [label]: url definition was seen

    @property
    def tail(self) -> str:
        return self._tail

    @property
    def tail_gap(self) -> bool:
        """The blank line before the open tail's render (as of its complete lines)."""
        return self._tail_gap

    def feed(self, text: str) -> list[Block]:
        """Append text; returns the blocks that are now final, in order."""
        self._tail += text
        cut = self._tail.rfind("\n") + 1
        if cut == 0:
            return []
        lines = self._tail[:cut].splitlines(keepends=True)
        blocks = self._parse("".join(lines))
        if len(blocks) == 1:
            self._tail_gap = self._gap(blocks[0])[0]
        if len(blocks) < 2:
            return []
        settled = self._settle(blocks[:-1], lines)
        self._tail_gap = self._gap(blocks[-1])[0]
        start = blocks[-1][0].map[0] if blocks[-1][0].map else len(lines)
        self._tail = "".join(lines[start:]) + self._tail[cut:]
        return settled

    def finish(self) -> list[Block]:
        """The stream ended: every block of the tail is final."""
        tail, self._tail = self._tail, ""
        lines = tail.splitlines(keepends=True)
        return self._settle(self._parse(tail), lines)

    def _parse(self, text: str) -> list[list[Token]]:
        env: dict[str, object] = {}
        tokens = _PARSER.parse(text, env)
        if env.get("references"):
            self.has_references = True
        return _top_level(tokens)

    def _gap(self, tokens: list[Token]) -> tuple[bool, bool]:
        """(blank line to add before the block's own render, Rich's state after it)."""
        flat = list(_flatten(tokens))
        state, alone = self._new_line, False
        for token in flat[:-1]:
            state, alone = _new_line_after(token, state), _new_line_after(token, alone)
        # alone: the render of the block by itself starts with that line already
        return state and not alone, _new_line_after(flat[-1], state)

    def _settle(self, blocks: list[list[Token]], lines: list[str]) -> list[Block]:
        settled: list[Block] = []
        for tokens in blocks:
            gap, self._new_line = self._gap(tokens)
            first = tokens[0].map or [0, len(lines)]
            settled.append(Block("".join(lines[first[0] : first[1]]), gap, tuple(tokens)))
        return settled


def parse(source: str) -> list[Token]:
    """Tokens of `source` as Rich's Markdown would parse it, without building a
    parser (Rich's Markdown builds one per instance: ~0.5 ms, once per frame
    for the open tail of a streaming reply). A parser is read-only while it
    parses, so the render thread may share it."""
    return _PARSER.parse(source)


def split_all(text: str) -> tuple[list[Block], bool]:
    """All blocks of a finished text, and whether it defines link references."""
    blocks = MarkdownBlocks()
    settled = blocks.feed(text)
    settled += blocks.finish()
    return settled, blocks.has_references
