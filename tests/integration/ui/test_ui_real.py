"""The real app (real ChatSession, real SQLite store) against the fake OpenAI server."""

from __future__ import annotations

from pathlib import Path

from newt.config import load_config
from newt.ui.app import NewtApp
from newt.ui.open_request import OpenRequest
from newt.ui.screens.chat import ChatScreen
from newt.ui.screens.memory import MemoryScreen, memory_rows
from newt.ui.screens.setup import SetupScreen
from newt.ui.screens.status import ErrorScreen
from newt.ui.widgets.chat_log import ChatLog
from newt.ui.widgets.messages import AssistantMessage, ErrorMessage, NoticeMessage
from tests.support.fake_openai import ErrorReply, FakeOpenAI, Reply  # fixture via conftest
from tests.support.homes import config_for
from tests.support.local_machine import no_local_server
from tests.support.pilot import chat_ready, type_and_send, wait_idle


async def test_chat_memory_quit_and_continue(home: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply(text="The **lake** is cold."), Reply(text="Second answer."))
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "tell me about the lake")
        await wait_idle(pilot, screen)
        await type_and_send(pilot, "and then?")
        await wait_idle(pilot, screen)
        replies = [m.entry.text for m in screen.query(AssistantMessage)]
        assert replies == ["The **lake** is cold.", "Second answer."]
        assert screen.title == "tell me about the lake"
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert isinstance(app.screen, MemoryScreen)
        before = dict(memory_rows(app.screen.status))
        assert before["turns"] == "2 resident of 2"
        await pilot.press("escape")
        await pilot.press("ctrl+q")
    assert app.session is not None and app.session.store.db._closed  # type: ignore[attr-defined]

    app2 = NewtApp(config_for(fake_openai), opening=OpenRequest(continue_latest=True))
    async with app2.run_test(size=(140, 40)) as pilot:
        screen = await chat_ready(pilot)
        await wait_idle(pilot, screen)
        assert [m.entry.text for m in screen.query(AssistantMessage)] == replies
        assert screen.title == "tell me about the lake"
        after = dict(memory_rows(app2.session.memory_status()))  # type: ignore[union-attr]
        for key in ("fullness", "budget", "last reported", "turns"):
            assert after[key] == before[key], key


async def test_notes_inline_feedback(home: Path, fake_openai: FakeOpenAI) -> None:
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        for command in (
            "/note likes green tea",
            "/note replace green => likes black tea",
            "/note list",
            "/note remove nothing-like-this",
            "/note remove black",
        ):
            await type_and_send(pilot, command)
            await wait_idle(pilot, screen)
        notices = [str(n.render()) for n in screen.query(NoticeMessage)]
        assert len(notices) == 5
        assert "likes black tea" in notices[2]
        assert notices[3] != notices[2] and screen.query(".-warning")  # not found: a warning
        assert fake_openai.chat_requests == []  # notes never reach the model as a turn


async def test_backend_error_inline_retry(home: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(
        ErrorReply(500, {"error": {"message": "server on fire"}}), Reply(text="ok now")
    )
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "hello?")
        await wait_idle(pilot, screen)
        assert screen.query(ErrorMessage)
        assert screen.prompt.text == "hello?"
        assert any(n.severity == "error" for n in app._notifications)
        await pilot.click(".retry")
        await wait_idle(pilot, screen)
        assert screen.query(AssistantMessage).last().entry.text == "ok now"


async def test_resume_picker_and_export(home: Path, fake_openai: FakeOpenAI) -> None:
    # Replies of their own: the default "ok: <last user text>" would echo the
    # second request's recall capsules (the first conversation's volcanoes, found
    # by meaning) into the second conversation's stored reply, and the filter
    # would then rightly match it too.
    fake_openai.script(Reply(text="Lava and ash."), Reply(text="Water runs downhill."))
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "first about volcanoes")
        await wait_idle(pilot, screen)
        first_id = app.session.conversation.id  # type: ignore[union-attr]
        await pilot.press("ctrl+n")
        await wait_idle(pilot, screen)
        await type_and_send(pilot, "second about rivers")
        await wait_idle(pilot, screen)
        await type_and_send(pilot, "/resume")
        await pilot.pause(0.3)
        for ch in "volcano":
            await pilot.press(ch)
        await pilot.pause(0.4)
        assert [c.id for c in app.screen.results] == [first_id]  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_idle(pilot, screen)
        assert app.session.conversation.id == first_id  # type: ignore[union-attr]
        log = screen.query_one(ChatLog)
        assert getattr(log.entries[0], "text", "") == "first about volcanoes"
        await type_and_send(pilot, "/export json")
        await wait_idle(pilot, screen)
    exported = list(Path.cwd().glob("newt-*.json"))
    assert len(exported) == 1 and "volcanoes" in exported[0].read_text()


async def test_compaction_divider_live_and_after_reopen(
    home: Path, fake_openai: FakeOpenAI
) -> None:
    long = "word " * 400  # ~500 tokens each: a 512-token budget must compact
    fake_openai.script(
        Reply(text=long, chunk_size=200),
        Reply(text=long, chunk_size=200),
        Reply(text="summary of the early talk"),  # the summarizer's request
        Reply(text=long, chunk_size=200),
        Reply(text="summary again"),
    )
    config = config_for(fake_openai, context_tokens=1024, threshold_pct=0.5)
    app = NewtApp(config)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        for text in ("one", "two", "three"):
            await type_and_send(pilot, text)
            await wait_idle(pilot, screen)
        assert screen.query(".compaction")
        live = app.session.memory_status()  # type: ignore[union-attr]
    app2 = NewtApp(
        config_for(fake_openai, context_tokens=1024, threshold_pct=0.5),
        opening=OpenRequest(continue_latest=True),
    )
    async with app2.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await wait_idle(pilot, screen)
        assert screen.query(".compaction")
        again = app2.session.memory_status()  # type: ignore[union-attr]
        assert (again.used, again.resident_turns) == (live.used, live.resident_turns)


async def test_first_run_setup_screen_saves_config(home: Path, fake_openai: FakeOpenAI) -> None:
    config = load_config()
    assert not config.backend.base_url
    app = NewtApp(config, discover=no_local_server)
    async with app.run_test(size=(100, 40)) as pilot:
        for _ in range(50):
            if isinstance(app.screen, SetupScreen):
                break
            await pilot.pause(0.02)
        assert isinstance(app.screen, SetupScreen)
        assert "newt --local" in str(app.screen.query_one("#setup-intro").render())
        app.screen.query_one("#setup-base-url").value = fake_openai.base_url  # type: ignore[attr-defined]
        app.screen.query_one("#setup-model").value = "fake-model"  # type: ignore[attr-defined]
        save = app.screen.query_one("#setup-save")
        for _ in range(50):  # below the local models the screen offers, which may still be coming
            save.scroll_visible(animate=False)
            await pilot.pause(0.02)
            if save.region.height and app.screen.region.contains_region(save.region):
                break
        await pilot.click("#setup-save")
        await chat_ready(pilot)
    saved = (home / "config.toml").read_text()
    assert fake_openai.base_url in saved and 'model = "fake-model"' in saved
    assert "# OpenAI-compatible endpoint" in saved  # the template's comments survive


async def test_discovered_local_server_skips_setup(home: Path, fake_openai: FakeOpenAI) -> None:
    app = NewtApp(load_config(), discover=lambda: (fake_openai.base_url, "fake-model"))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        assert screen.sub_title == "fake-model"


async def test_bad_database_is_an_error_screen(home: Path, fake_openai: FakeOpenAI) -> None:
    home.mkdir(parents=True)
    (home / "newt.db").write_text("this is not sqlite")
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(50):
            if isinstance(app.screen, ErrorScreen):
                break
            await pilot.pause(0.02)
        assert isinstance(app.screen, ErrorScreen)
        assert "not a newt database" in app.screen.message
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 1


async def test_unreachable_backend_offers_retry(home: Path, fake_openai: FakeOpenAI) -> None:
    config = load_config(base_url="http://127.0.0.1:9/v1", model="m")
    config.backend.max_retries = 0
    app = NewtApp(config)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(200):
            if isinstance(app.screen, (ErrorScreen, ChatScreen)):
                break
            await pilot.pause(0.02)
        await pilot.pause(0.1)
        screen = app.screen
        if isinstance(screen, ChatScreen):
            # The session opened without a probe answer; the first turn fails inline.
            await type_and_send(pilot, "hi")
            await wait_idle(pilot, screen)
            assert screen.query(ErrorMessage) and screen.prompt.text == "hi"
        else:
            assert isinstance(screen, ErrorScreen)
            await pilot.press("q")
