"""The thinking block folds when the answer begins, not after its last word.
Real app (Pilot), real session and store, fake server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from newt.ui.app import NewtApp
from newt.ui.widgets.messages import AssistantMessage
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.homes import config_for
from tests.support.pilot import chat_ready, type_and_send, wait_idle


async def test_thinking_is_folded_while_the_answer_streams(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(
        Reply(
            chunks=[
                "<think>\nFirst I weigh the lake.\nThen the sky.\n</think>\n\nThe lake",
                " is",
                " cold",
                " today.",
            ],
            delay_s=0.5,  # the answer streams for a while after its first words
        ),
    )
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "lake?")
        view: Any = None
        for _ in range(400):
            await pilot.pause(0.01)
            views = list(screen.query(AssistantMessage))
            if views and "The lake" in views[-1].entry.text:
                view = views[-1]
                break
        assert view is not None, "the answer never began"
        await pilot.pause()  # the frame that shows the answer's first words
        assert view.entry.status == "streaming" and "today" not in view.entry.text
        block = view.thinking
        shown = str(block.render())
        assert not block.live
        assert shown == "▸ thinking · 2 lines · ctrl+t unfolds"  # folded, no live preview
        await wait_idle(pilot, screen)
        assert str(block.render()) == "▸ thinking · 2 lines · ctrl+t unfolds"
