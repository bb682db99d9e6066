"""A slow local model reading a long prompt: the reply's status line
says the prompt is being read, with the server's progress, then the time to the first
token and the reply's pace; Esc stops it while the prompt is read and the server sees
the request go. The fake server stands in for llama-server (`prompt_read_s`, with its
`prompt_progress` chunks when the request asks for them)."""

from __future__ import annotations

import time
from pathlib import Path

from newt.ui.app import NewtApp
from newt.ui.widgets.messages import AssistantMessage
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.homes import config_for
from tests.support.pilot import chat_ready, type_and_send, wait_idle


def status_of(message: AssistantMessage) -> str:
    return str(message.query_one(".status").render())


async def test_the_status_line_shows_the_prompt_being_read_then_the_pace(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    config = config_for(fake_openai)
    config.server_context_tokens = 4096  # newt's own llama-server: it asks for progress
    # the tool probe's answer (no tool call), then a reply that reads its prompt 2 s
    fake_openai.script(
        Reply(text="no tools here"),
        Reply(
            text="The answer, " * 20,
            prompt_read_s=2.0,
            progress_steps=4,
            delay_s=0.02,
            prompt_tokens=1536,
        ),
    )
    app = NewtApp(config)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "a long question")
        seen: list[str] = []
        for _ in range(300):
            await pilot.pause(0.02)
            messages = list(screen.query(AssistantMessage))
            if messages and messages[-1].entry.status == "streaming":
                seen.append(status_of(messages[-1]))
            if messages and messages[-1].entry.status == "complete":
                break
        reading = [s for s in seen if s.startswith("Reading the prompt:")]
        assert reading, seen
        assert any(" of 1,536 tokens" in s and "s left" in s for s in reading), reading
        assert all("Esc" in s for s in reading)
        assert any(s.startswith("First token after 2.") for s in seen), seen
        await wait_idle(pilot, screen)
        footer = str(screen.query(AssistantMessage).last().query_one(".reply-footer").render())
        assert "first token after 2." in footer
    body = fake_openai.chat_requests[-1].body
    assert body["return_progress"] is True


async def test_escape_while_the_prompt_is_read_stops_and_frees_the_server(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    config = config_for(fake_openai)
    config.server_context_tokens = 4096
    fake_openai.script(
        Reply(text="no tools here"),
        Reply(text="never seen", prompt_read_s=10.0, progress_steps=40),
    )
    app = NewtApp(config)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "a long question")
        for _ in range(200):
            await pilot.pause(0.02)
            messages = list(screen.query(AssistantMessage))
            if messages and status_of(messages[-1]).startswith("Reading the prompt:"):
                break
        else:
            raise AssertionError("the prompt was never shown being read")
        stopped_at = time.monotonic()
        await pilot.press("escape")
        await wait_idle(pilot, screen)
        assert fake_openai.wait_for_disconnect(1, timeout=3.0)
        assert time.monotonic() - stopped_at < 3.0  # well before the 10 s read ends
        assert screen.query(AssistantMessage).last().entry.status == "interrupted"


async def test_the_reply_footer_wraps_in_a_narrow_chat_rather_than_being_cut(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    """With the sidebar open the chat column is narrow: the whole footer still shows."""
    config = config_for(fake_openai)
    config.server_context_tokens = 4096
    fake_openai.script(
        Reply(text="no tools here"),
        Reply(text="The answer.", prompt_read_s=1.6, prompt_tokens=1536),
    )
    app = NewtApp(config)
    async with app.run_test(size=(48, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "a long question")
        await wait_idle(pilot, screen)
        footer = screen.query(AssistantMessage).last().query_one(".reply-footer")
        text = str(footer.render())
        assert "first token after 1." in text
        assert footer.size.height >= 2 and footer.size.width * footer.size.height >= len(text)
