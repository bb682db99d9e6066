"""Regenerate, edit, fork and attachments in the real app (Pilot, real session,
real SQLite) against the fake OpenAI server."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import OptionList

from newt.ui.app import NewtApp
from newt.ui.command_palette import SlashCommandProvider
from newt.ui.screens.picker import PickerScreen, conversation_prompt
from newt.ui.widgets.chat_log import ChatLog
from newt.ui.widgets.entries import AssistantEntry, ErrorEntry, UserEntry
from newt.ui.widgets.messages import UserMessage
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.homes import config_for
from tests.support.images import PNG
from tests.support.pilot import chat_ready, type_and_send, wait_idle


def shown(log: ChatLog) -> list[tuple[str, str]]:
    """(kind, text) of the log's user and assistant entries."""
    out = []
    for entry in log.entries:
        if isinstance(entry, UserEntry):
            out.append(("user", entry.text))
        elif isinstance(entry, AssistantEntry):
            out.append(("assistant", entry.text))
    return out


async def test_regenerate_by_key_and_by_command(home: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply(text="one"), Reply(text="two"), Reply(text="TWO again"))
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(110, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "first")
        await wait_idle(pilot, screen)
        await type_and_send(pilot, "second")
        await wait_idle(pilot, screen)
        await pilot.press("ctrl+r")
        await wait_idle(pilot, screen)
        assert shown(screen.log_view) == [
            ("user", "first"),
            ("assistant", "one"),
            ("user", "second"),
            ("assistant", "TWO again"),
        ]
        await type_and_send(pilot, "/regenerate")
        await wait_idle(pilot, screen)
        assert shown(screen.log_view)[-1] == ("assistant", "ok: second")
        assert len(fake_openai.chat_requests) == 4
        bodies = [str(r.body) for r in fake_openai.chat_requests[2:]]
        assert all("'two'" not in b and "TWO again" not in b for b in bodies)
        assert screen.prompt.text == ""


async def test_edit_puts_the_last_prompt_in_the_bar_and_replaces_the_turn(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(110, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "capital of frnace")
        await wait_idle(pilot, screen)
        await pilot.press("f4")
        await wait_idle(pilot, screen)
        assert screen.prompt.text == "capital of frnace"
        assert screen.prompt.editing and screen.prompt.has_class("-editing")
        screen.prompt.area.load_text("capital of France")
        await pilot.press("enter")
        await wait_idle(pilot, screen)
        assert shown(screen.log_view) == [
            ("user", "capital of France"),
            ("assistant", "ok: capital of France"),
        ]
        assert not screen.prompt.editing
        assert "frnace" not in str(fake_openai.chat_requests[-1].body)
        # /edit by command, then emptying the bar cancels: the next prompt is a new turn
        await type_and_send(pilot, "/edit")
        await wait_idle(pilot, screen)
        assert screen.prompt.editing
        screen.prompt.set_text("")
        assert not screen.prompt.editing
        await type_and_send(pilot, "another")
        await wait_idle(pilot, screen)
        assert [t for k, t in shown(screen.log_view) if k == "user"] == [
            "capital of France",
            "another",
        ]


async def test_fork_by_command_and_from_a_focused_message(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(110, 40)) as pilot:
        screen = await chat_ready(pilot)
        for text in ("alpha", "bravo", "charlie"):
            await type_and_send(pilot, text)
            await wait_idle(pilot, screen)
        session = app.session
        assert session is not None and session.conversation is not None
        parent = session.conversation.id
        await type_and_send(pilot, "/fork 2")
        await wait_idle(pilot, screen)
        assert session.conversation.id != parent
        assert [t for k, t in shown(screen.log_view) if k == "user"] == ["alpha", "bravo"]
        # the focused message's key: fork at the first turn
        first = screen.query(UserMessage).first()
        first.focus()
        await pilot.press("f")
        await wait_idle(pilot, screen)
        assert [t for k, t in shown(screen.log_view) if k == "user"] == ["alpha"]
        # the picker shows forks under their parent's title
        await type_and_send(pilot, "/resume")
        await pilot.pause(0.4)
        picker = app.screen
        assert isinstance(picker, PickerScreen)
        forks = [c for c in picker.results if getattr(c, "parent_id", None)]
        assert len(forks) == 2
        assert "↳ fork of alpha" in conversation_prompt(forks[0], False).plain
        options = picker.query_one("#picker-list", OptionList)
        rows = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert sum("↳ fork of alpha" in r for r in rows) == 2
        await pilot.press("escape")


async def test_a_bad_attachment_keeps_the_prompt_and_sends_nothing(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    (Path.cwd() / "blob.bin").write_bytes(b"\x00\x01" * 10)
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(110, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "what is @blob.bin")
        await pilot.pause(0.2)
        assert screen.prompt.text == "what is @blob.bin"
        assert fake_openai.chat_requests == []
        assert shown(screen.log_view) == []
        await type_and_send(pilot, "and @missing/file.txt")
        await pilot.pause(0.2)
        assert screen.prompt.text == "and @missing/file.txt"
        assert fake_openai.chat_requests == []


async def test_path_completion_and_a_text_attachment(home: Path, fake_openai: FakeOpenAI) -> None:
    (Path.cwd() / "docs").mkdir()
    (Path.cwd() / "docs" / "notes.txt").write_text("the secret is 42\n")
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(110, 30)) as pilot:
        screen = await chat_ready(pilot)
        screen.prompt.area.focus()
        for key in "read @do":
            await pilot.press(key if key != " " else "space")
        await pilot.pause(0.1)
        assert screen.prompt.menu.display
        await pilot.press("tab")
        await pilot.pause(0.1)
        assert screen.prompt.text == "read @docs/"
        assert screen.prompt.menu.display  # a directory: its entries are offered
        await pilot.press("tab")
        await pilot.pause(0.1)
        assert screen.prompt.text == "read @docs/notes.txt "
        await pilot.press("enter")
        await wait_idle(pilot, screen)
        sent = fake_openai.chat_requests[-1].body["messages"][-1]["content"]
        assert '<attachment path="docs/notes.txt">\nthe secret is 42\n</attachment>' in sent


async def test_the_palette_offers_the_new_commands(home: Path, fake_openai: FakeOpenAI) -> None:
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(110, 30)) as pilot:
        await chat_ready(pilot)
        provider = SlashCommandProvider(app.screen)
        titles = [hit.text async for hit in provider.search("fork")]
        assert "/fork" in titles
        titles = [hit.text async for hit in provider.search("regenerate")]
        assert "/regenerate" in titles


async def test_an_image_the_backend_refuses_is_explained_and_the_prompt_kept(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.accepts_images = False
    (Path.cwd() / "dot.png").write_bytes(PNG)
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(110, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "what is in @dot.png")
        await wait_idle(pilot, screen)
        errors = [e for e in screen.log_view.entries if isinstance(e, ErrorEntry)]
        assert errors and "does not accept images" in errors[-1].message
        assert "mmproj" in errors[-1].message
        assert screen.prompt.text == "what is in @dot.png"  # the turn is not lost
        assert len(fake_openai.chat_requests) == 1
        # now known: refused before anything is sent or the bar is cleared
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert screen.prompt.text == "what is in @dot.png"
        assert len(fake_openai.chat_requests) == 1


async def test_regenerate_keeps_the_earlier_messages_mounted(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    """The turns before the regenerated one keep their widgets through the drop
    and the reload: replacing them all blanked the log for a frame."""
    fake_openai.script(Reply(text="one"), Reply(text="two"), Reply(text="TWO again"))
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(110, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "first")
        await wait_idle(pilot, screen)
        await type_and_send(pilot, "second")
        await wait_idle(pilot, screen)
        before = screen.log_view.query(UserMessage).first()
        await pilot.press("ctrl+r")
        await wait_idle(pilot, screen)
        await pilot.pause()
        assert shown(screen.log_view)[-1] == ("assistant", "TWO again")
        after = screen.log_view.query(UserMessage).first()
        assert after is before and after.entry is screen.log_view.entries[0]
