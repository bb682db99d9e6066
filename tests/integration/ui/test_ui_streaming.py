"""Streaming Markdown: final blocks rendered once, the same as a one-shot render.

The splitter and the renderer are checked against Rich's own rendering of the
whole text, for the fixture cut at every chunk boundary (a reply can end, or
be stopped, anywhere). The widget is checked in the real app against the fake
OpenAI server: earlier blocks are not rendered again when later text arrives
or the stream ends, nothing is laid out while the user has scrolled up, keys
reach the prompt mid-stream, and a resize renders the reply again correctly.
"""

from __future__ import annotations

import asyncio
import gc
import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.style import Style
from textual import events
from textual.app import App
from textual.containers import VerticalScroll

from newt.config import load_config
from newt.ui.app import NewtApp
from newt.ui.widgets import markdown_render
from newt.ui.widgets.chat_log import ChatLog
from newt.ui.widgets.markdown_blocks import Block, MarkdownBlocks, split_all
from newt.ui.widgets.markdown_render import Line, render_blocks, strip_of
from newt.ui.widgets.messages import AssistantMessage
from newt.ui.widgets.streaming_markdown import StreamingMarkdown
from tests.support.fake_openai import FakeOpenAI, Reply  # fixture via conftest
from tests.support.paths import FIXTURES
from tests.support.pilot import chat_ready, type_and_send, wait_idle

FIXTURE = (FIXTURES / "streamed_reply.md").read_text()
CHUNK = 9  # characters per delta when the fixture is streamed
WIDTH = 80


def _console() -> Console:
    return Console(width=WIDTH, file=io.StringIO(), color_system="truecolor", force_terminal=True)


def _picture(lines: list[Line]) -> list[list[tuple[str, Style | None]]]:
    """Text and style of every cell run, whatever the segment boundaries."""
    picture = []
    for line in lines:
        runs: list[tuple[str, Style | None]] = []
        for segment in strip_of(line):
            if runs and runs[-1][1] == segment.style:
                runs[-1] = (runs[-1][0] + segment.text, segment.style)
            elif segment.text:
                runs.append((segment.text, segment.style))
        picture.append(runs)
    return picture


def _one_shot(text: str, console: Console, width: int = WIDTH) -> list[Line]:
    """Rich's render of the whole text at once (a Block without tokens is parsed whole)."""
    return render_blocks([Block(text, False)], width, Style(), console, console.options)


def _streamed(text: str, chunk: int) -> list[Block]:
    blocks = MarkdownBlocks()
    settled: list[Block] = []
    for start in range(0, len(text), chunk):
        settled += blocks.feed(text[start : start + chunk])
    return settled + blocks.finish()


def test_fixture_covers_the_hard_blocks() -> None:
    blocks, _ = split_all(FIXTURE)
    kinds = {b.tokens[0].type for b in blocks}
    assert {"fence", "table_open", "bullet_list_open", "ordered_list_open", "hr"} <= kinds
    assert {"blockquote_open", "code_block", "html_block", "heading_open"} <= kinds
    assert any(not b.gap for b in blocks[1:])  # after the rule and after the image


@pytest.mark.parametrize("chunk", [1, 4, CHUNK])
def test_settled_blocks_are_final(chunk: int) -> None:
    """Whatever settled mid-stream is exactly the start of the whole reply's blocks."""
    whole, _ = split_all(FIXTURE)
    blocks = MarkdownBlocks()
    settled: list[Block] = []
    for start in range(0, len(FIXTURE), chunk):
        settled += blocks.feed(FIXTURE[start : start + chunk])
        assert settled == whole[: len(settled)]
        assert FIXTURE[: start + chunk].endswith(blocks.tail)
    assert len(settled) == len(whole) - 1  # the last block stays open until the end
    assert settled + blocks.finish() == whole


def test_replies_cut_at_every_chunk_boundary_render_as_one_shot() -> None:
    console = _console()
    for end in range(CHUNK, len(FIXTURE) + CHUNK, CHUNK):
        cut = FIXTURE[:end]
        streamed = render_blocks(_streamed(cut, CHUNK), WIDTH, Style(), console, console.options)
        assert _picture(streamed) == _picture(_one_shot(cut, console)), f"cut after {end}"


def test_reference_definitions_are_noticed() -> None:
    text = "See [the docs][d].\n\nMore text.\n\n[d]: http://example.com\n"
    blocks = MarkdownBlocks()
    for start in range(0, len(text), 5):
        blocks.feed(text[start : start + 5])
    blocks.finish()
    assert blocks.has_references
    assert not split_all("Plain [brackets] only.\n")[1]


# -- the widget in the real app -----------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NEWT_HOME", str(tmp_path / "home"))
    for var in ("NEWT_CONFIG", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "home"


def _app(server: FakeOpenAI) -> NewtApp:
    config = load_config(base_url=server.base_url, model="fake-model")
    config.backend.max_retries = 0
    return NewtApp(config)


def _reply_lines(stream: StreamingMarkdown) -> list[Line]:
    return [line for chunk in stream.chunks for line in chunk.lines]


def _expected(app: Any, stream: StreamingMarkdown, text: str) -> list[Line]:
    chunk = stream.chunks[-1]
    width = chunk.content_size.width
    options = app.console_options.update(highlight=False)
    return render_blocks([Block(text, False)], width, chunk.rich_style, app.console, options)


async def _until(ready: Any, what: str) -> None:
    # Plain sleeps, not pilot.pause(): the pilot waits for an idle app, and a
    # streaming app is not idle.
    for _ in range(1000):
        if ready():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


def _send(screen: Any, text: str) -> None:
    screen.prompt.set_text(text)
    _keys(screen.app, "enter")


def _keys(app: Any, *keys: str) -> None:
    """Keys as the terminal driver delivers them, without waiting for the app."""
    for key in keys:
        app._driver.send_message(events.Key(key, key if len(key) == 1 else None))


async def test_stream_renders_each_block_once_and_matches_one_shot(
    home: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        Reply(text=FIXTURE),  # fills the log: its scrollbar is up before the reply under test
        Reply(text=FIXTURE, chunk_size=CHUNK, delay_s=0.01),
    )
    app = _app(fake_openai)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "first")
        await wait_idle(pilot, screen)
        _send(screen, "how do lakes freeze?")
        await _until(lambda: len(screen.query(StreamingMarkdown)) == 2, "a streamed segment")
        stream = screen.query(StreamingMarkdown).last()

        def four_settled() -> bool:
            # A slow first pass takes a burst: its older blocks go to a chunk of
            # their own, rendered once the burst is over. Wait for them too, so
            # the lines seen now are the start of the reply's lines.
            holding = [c for c in stream.chunks if c.blocks]
            return sum(len(c.blocks) for c in holding) >= 4 and all(c.lines for c in holding)

        await _until(four_settled, "four settled blocks")
        early = _reply_lines(stream)
        assert early, "settled blocks are on screen while the reply streams"
        _keys(app, "a", "b", "c")
        await _until(lambda: screen.prompt.text == "abc", "keys in the prompt")
        assert screen.busy  # typed while the reply streams
        await wait_idle(pilot, screen)
        reply = screen.query(AssistantMessage).last()
        assert reply.entry.text == FIXTURE and reply.entry.status == "complete"
        assert stream.live not in stream.children  # the tail was settled, not kept live
        lines = _reply_lines(stream)
        # The lines rendered mid-stream are the very same objects: nothing was
        # rendered again when later blocks arrived or the stream ended.
        assert all(a is b for a, b in zip(early, lines, strict=False))
        assert _picture(lines) == _picture(_expected(app, stream, FIXTURE))


async def test_burst_shows_the_bottom_first_then_the_rest(
    home: Path, fake_openai: FakeOpenAI
) -> None:
    long_reply = FIXTURE * 6
    fake_openai.script(Reply(text=long_reply, chunk_size=4000))  # a few big deltas
    app = _app(fake_openai)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "everything at once")
        await wait_idle(pilot, screen)
        stream = screen.query_one(StreamingMarkdown)
        assert len(stream.chunks) > 1  # older blocks of the burst were held back...
        await _until(lambda: all(c.lines or not c.blocks for c in stream.chunks), "held blocks")
        await pilot.pause()
        # ...and then rendered: the whole reply reads as a one-shot render.
        assert _picture(_reply_lines(stream)) == _picture(_expected(app, stream, long_reply))
        log = screen.query_one(ChatLog)
        assert log.max_scroll_y - log.scroll_y <= 1  # still following the bottom


async def test_scrolled_up_log_is_not_laid_out_until_the_user_returns(
    home: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        Reply(text="first answer\n\n" + FIXTURE * 2),
        Reply(text=FIXTURE, chunk_size=CHUNK, delay_s=0.01),
    )
    app = _app(fake_openai)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "one")
        await wait_idle(pilot, screen)
        _send(screen, "two")
        await _until(lambda: len(screen.query(StreamingMarkdown)) == 2, "second reply")
        stream = screen.query(StreamingMarkdown).last()

        def settled() -> int:
            # every chunk: a slow first pass can leave the first chunk empty
            # and put a burst's older blocks in a chunk of their own
            return sum(len(c.blocks) for c in stream.chunks)

        await _until(lambda: settled() > 0, "a settled block")
        log = screen.query_one(ChatLog)
        log.focus()
        _keys(app, "pageup")
        await _until(log.scrolled_away, "the log scrolled away")
        shown = settled()
        await asyncio.sleep(0.3)  # text keeps arriving meanwhile
        assert screen.busy and settled() == shown  # nothing rendered
        _keys(app, "end")
        await wait_idle(pilot, screen)
        assert _picture(_reply_lines(stream)) == _picture(_expected(app, stream, FIXTURE))


async def test_resize_renders_the_reply_again_at_the_new_width(
    home: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply(text=FIXTURE, chunk_size=CHUNK))
    app = _app(fake_openai)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "how do lakes freeze?")
        await wait_idle(pilot, screen)
        stream = screen.query_one(StreamingMarkdown)
        before = _picture(_reply_lines(stream))
        await pilot.resize_terminal(70, 40)
        await _until(
            lambda: _picture(_reply_lines(stream)) == _picture(_expected(app, stream, FIXTURE)),
            "the reply rendered at the new width",
        )
        assert _picture(_reply_lines(stream)) != before


async def test_a_reply_mounted_before_layout_renders_at_the_log_width() -> None:
    """Under load the first render pass can run before the message holding
    the stream is laid out: it renders at the log's width, not one letter a line."""

    class Log(App[None]):
        def compose(self) -> Any:
            yield VerticalScroll(id="log")

    app = Log()
    async with app.run_test(size=(WIDTH, 20)):
        log = app.query_one("#log", VerticalScroll)
        stream = StreamingMarkdown()
        holder = VerticalScroll(stream)
        await log.mount(holder)
        assert holder.content_size.width == 0  # neither is laid out yet
        assert stream._width() == log.content_size.width == WIDTH
        await stream.finish()


async def test_kept_lines_cost_the_garbage_collector_nothing(
    home: Path, fake_openai: FakeOpenAI
) -> None:
    """A reply's lines are packed tuples the GC untracks, and its blocks keep no parse:
    a full collection does not walk a long reply (it did: ~50,000 objects per 8,000 tokens)."""
    fake_openai.script(Reply(text=FIXTURE * 3, chunk_size=CHUNK * 8))
    app = _app(fake_openai)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "a long answer")
        await wait_idle(pilot, screen)
        stream = screen.query_one(StreamingMarkdown)
        await _until(lambda: all(c.lines or not c.blocks for c in stream.chunks), "all rendered")
        gc.collect()
        lines = _reply_lines(stream)
        assert len(lines) > 100
        assert not any(gc.is_tracked(line) for line in lines)
        blocks = [b for c in stream.chunks for b in c.blocks]
        assert blocks and all(b.tokens == () for b in blocks)
        assert _picture(lines) == _picture(_expected(app, stream, FIXTURE * 3))


class _OneReply(App[None]):
    """Just a streaming segment in a scrolling view, as in a reply (the scrollbar's
    column kept, as the chat log keeps it, so the width never changes)."""

    CSS = "VerticalScroll { scrollbar-gutter: stable; }"

    def compose(self) -> Any:
        with VerticalScroll():
            yield StreamingMarkdown()


async def _characters_rendered_by_the_end(text: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """Characters of Markdown rendered by `finish()` once everything before is on screen."""
    rendered: list[int] = []
    original = markdown_render.render_block

    def counting(block: Block, *args: Any) -> Any:
        rendered.append(len(block.source))
        return original(block, *args)

    app = _OneReply()
    async with app.run_test(size=(100, 40)):
        stream = app.query_one(StreamingMarkdown)
        for start in range(0, len(text), 200):
            stream.write(text[start : start + 200])
            # one write per pass, so no pass ever holds a burst's blocks back
            await _until(lambda: not stream._pending, "the pass took the text")
        await _until(
            lambda: (
                not stream._pending
                and bool(stream.live.blocks)
                and stream.live.blocks[-1].source.endswith(text[-20:])
            ),
            "every pass done: the open tail on screen",
        )
        monkeypatch.setattr(markdown_render, "render_block", counting)
        await stream.finish()
        await asyncio.sleep(0.3)  # anything the end set off
        monkeypatch.undo()
    return sum(rendered)


async def test_the_end_of_a_stream_costs_the_same_for_any_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Work counted, not time: the end renders the last block, whatever came before."""
    last = "The last paragraph, cut by the end of the stream"
    short_text, long_text = FIXTURE + "\n\n" + last, FIXTURE * 6 + "\n\n" + last
    short = await _characters_rendered_by_the_end(short_text, monkeypatch)
    long = await _characters_rendered_by_the_end(long_text, monkeypatch)
    # The open tail when the stream ends: the fixture's last line (kept open
    # until a complete line starts the next block) and the unfinished paragraph.
    tail = FIXTURE.splitlines(keepends=True)[-1] + last
    assert short == long == len(tail)
