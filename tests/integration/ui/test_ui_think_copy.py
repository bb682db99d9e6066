"""Thinking, copy and the reply footer in the real app (real session and store, fake server)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from newt.ui.app import NewtApp
from newt.ui.copying import CopyRequest, code_blocks, parse_copy, resolve_copy
from newt.ui.open_request import OpenRequest
from newt.ui.screens.memory import MemoryScreen, memory_rows
from newt.ui.widgets.entries import AssistantEntry, UserEntry
from newt.ui.widgets.messages import AssistantMessage, NoticeMessage, UserMessage
from newt.ui.widgets.reply_parts import ThinkingBlock
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.homes import config_for
from tests.support.pilot import chat_ready, type_and_send, wait_idle

CODE_REPLY = (
    "Two ways:\n\n```python\nprint('one')\n```\n\nor\n\n```sh\necho two\necho 2\n```\n\nDone."
)


def visible(widget: Any) -> str:
    return str(widget.render())


def thinking_block(screen: Any, index: int = -1) -> ThinkingBlock:
    return list(screen.query(AssistantMessage))[index].thinking


async def test_thinking_live_folded_then_ctrl_t_and_resumed(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(
        Reply(
            # a pause after each piece, so the live state is seen on a busy machine too
            chunks=[
                "<think>\nFirst I we",
                "igh the lake.\nThen the sky.\n</thi",
                "nk>\n\nThe lake",
                " is cold.",
            ],
            delay_s=0.4,
            prompt_tokens=321,
            completion_tokens=30,
        ),
        Reply(text="Plain answer.", reasoning="a \x1b[31mred\x1b[0m thought", usage=False),
    )
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "lake?")
        # while it streams the block is folded and shows the newest line
        for _ in range(300):
            await pilot.pause(0.01)
            block = thinking_block(screen)
            if block.display and block.live:
                break
        assert "thinking…" in visible(block) and "ctrl+t unfolds" in visible(block)
        await wait_idle(pilot, screen)
        block = thinking_block(screen)
        folded = visible(block)
        assert folded.startswith("▸ thinking · 2 lines") and "weigh" not in folded
        view = list(screen.query(AssistantMessage))[-1]
        assert view.entry.text == "The lake is cold."  # the answer alone
        assert "think>" not in visible(view)
        footer = visible(view.query_one(".reply-footer"))
        assert "321 prompt · 30 completion tokens" in footer and "tok/s" in footer

        await pilot.press("ctrl+t")
        await pilot.pause()
        unfolded = visible(block)
        assert "First I weigh the lake.\nThen the sky." in unfolded
        assert unfolded.startswith("▾ thinking")

        await type_and_send(pilot, "and?")
        await wait_idle(pilot, screen)
        second = thinking_block(screen)
        assert second.expanded  # new blocks follow the unfolded state
        assert "a red thought" in visible(second) and "\x1b" not in visible(second)
        footer = visible(list(screen.query(AssistantMessage))[-1].query_one(".reply-footer"))
        assert footer.startswith("~") and "estimated" in footer
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert not any(b.expanded for b in screen.query(ThinkingBlock))

        await pilot.press("ctrl+g")
        await pilot.pause()
        assert isinstance(app.screen, MemoryScreen)
        row = dict(memory_rows(app.screen.status))["conversation tokens"]
        stats = [v.entry.stats for v in screen.query(AssistantMessage)]
        prompt = sum(s.prompt_tokens for s in stats if s)
        completion = sum(s.completion_tokens for s in stats if s)
        assert stats[0] is not None and stats[0].prompt_tokens == 321
        assert row.startswith(f"{prompt} prompt + {completion} completion over 2 replies"), row
        assert "~1 estimated" in row, row
        await pilot.press("escape")
        await pilot.press("ctrl+q")

    # resumed: the thinking and the footer come back from the store
    app2 = NewtApp(config_for(fake_openai), opening=OpenRequest(continue_latest=True))
    async with app2.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        await wait_idle(pilot, screen)
        views = list(screen.query(AssistantMessage))
        assert [v.entry.thinking for v in views] == [
            "First I weigh the lake.\nThen the sky.",
            "a red thought",
        ]
        assert visible(views[0].thinking).startswith("▸ thinking · 2 lines")
        footer = visible(views[0].query_one(".reply-footer"))
        assert "321 prompt · 30 completion tokens" in footer and "tok/s" in footer
        # the model never saw the reasoning
        assert "weigh" not in str(fake_openai.chat_requests[-1].body["messages"])


async def test_copy_by_command_and_by_keys_on_a_focused_message(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(Reply(text="First reply."), Reply(text=CODE_REPLY))
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "/copy")
        await pilot.pause()
        notices = [m.entry.text for m in screen.query(NoticeMessage)]
        assert notices[-1] == "There is no reply to copy yet."
        await type_and_send(pilot, "one")
        await wait_idle(pilot, screen)
        await type_and_send(pilot, "two")
        await wait_idle(pilot, screen)

        await type_and_send(pilot, "/copy")
        await pilot.pause()
        assert app.clipboard == CODE_REPLY
        await type_and_send(pilot, "/copy 2")
        await pilot.pause()
        assert app.clipboard == "First reply."
        await type_and_send(pilot, "/copy code 2")
        await pilot.pause()
        assert app.clipboard == "echo two\necho 2"
        await type_and_send(pilot, "/copy code 3")
        await pilot.pause()
        notices = [m.entry.text for m in screen.query(NoticeMessage)]
        assert notices[-1] == "The last reply has 2 code blocks, not 3."
        assert app.clipboard == "echo two\necho 2"  # unchanged

        # from the keyboard: shift+tab reaches the newest message, up the one before
        await pilot.press("shift+tab")
        await pilot.pause()
        focused = app.focused
        assert isinstance(focused, AssistantMessage) and focused.entry.text == CODE_REPLY
        await pilot.press("1")
        await pilot.pause()
        assert app.clipboard == "print('one')"
        await pilot.press("up")
        await pilot.pause()
        assert isinstance(app.focused, UserMessage)
        await pilot.press("c")
        await pilot.pause()
        assert app.clipboard == "two"
        await pilot.press("up", "c")
        await pilot.pause()
        assert app.clipboard == "First reply."
        await pilot.press("down", "down", "down")
        await pilot.pause()
        assert app.focused is screen.query_one("#prompt-area")


def test_parse_copy_and_resolve() -> None:
    assert parse_copy("") == CopyRequest(1, None)
    assert parse_copy("3") == CopyRequest(3, None)
    assert parse_copy("code") == CopyRequest(1, 1)
    assert parse_copy("2 code 4") == CopyRequest(2, 4)
    for bad in ("0", "code 0", "x", "code 1 2", "2 3"):
        with pytest.raises(ValueError, match="Usage: /copy"):
            parse_copy(bad)
    entries = [UserEntry("q"), AssistantEntry([CODE_REPLY], "complete")]
    assert resolve_copy(entries, CopyRequest(1, 1))[0] == "print('one')"
    text, what = resolve_copy(entries, CopyRequest(1, 2))
    assert text == "echo two\necho 2"
    assert what == "code block 2 of the last reply (sh, 2 lines)"
    with pytest.raises(ValueError, match="only 1 reply"):
        resolve_copy(entries, CopyRequest(2, None))
    assert [b.code for b in code_blocks("    indented\n\ntext")] == ["indented"]


async def test_osc52_reaches_the_terminal(home: Path, fake_openai: FakeOpenAI) -> None:
    """copy_to_clipboard writes OSC 52 with the text base64-encoded (checked in tmux too)."""
    fake_openai.script(Reply(text="héllo"))
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        written: list[str] = []
        driver: Any = app._driver
        original = driver.write
        driver.write = lambda data: (written.append(data), original(data))
        await type_and_send(pilot, "hi")
        await wait_idle(pilot, screen)
        await type_and_send(pilot, "/copy")
        await pilot.pause()
        encoded = base64.b64encode("héllo".encode()).decode()
        assert f"\x1b]52;c;{encoded}\a" in "".join(written)
