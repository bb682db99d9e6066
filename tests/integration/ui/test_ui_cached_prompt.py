"""How much of the prompt the server read from its cache, where it says so
(OpenAI's `cached_tokens`, llama-server's `timings.cache_n`): the reply's stats
line and the /memory panel show it. Why: a long conversation is fast and cheap
only while the server keeps the start of the request; this is where a user
sees whether it does. The fake server reports `cached_tokens` as told."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from newt.ui.app import NewtApp
from newt.ui.screens.memory import MemoryScreen
from newt.ui.widgets.messages import AssistantMessage
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.homes import config_for
from tests.support.pilot import chat_ready, type_and_send, until, wait_idle


async def test_the_stats_line_and_memory_say_what_the_server_read_from_its_cache(
    home: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        Reply(text="first answer"),
        Reply(text="second answer", prompt_tokens=1536, cached_tokens=1400),
    )
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "hello")
        await wait_idle(pilot, screen)
        first = str(screen.query(AssistantMessage).last().query_one(".reply-footer").render())
        assert "from the cache" not in first  # the server said nothing of a cache
        await type_and_send(pilot, "and then?")
        await wait_idle(pilot, screen)
        footer = str(screen.query(AssistantMessage).last().query_one(".reply-footer").render())
        assert "1,536 prompt (1,400 from the cache)" in footer, footer
        await type_and_send(pilot, "/memory")
        await until(pilot, lambda: isinstance(app.screen, MemoryScreen), "/memory")
        await pilot.pause()
        rows = " ".join(str(s.render()) for s in app.screen.query(Static))
        assert "1,400 of this session's prompt tokens read from the server's cache" in rows
