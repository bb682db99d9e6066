"""The user owns the memory, in the TUI: rename and delete from the
resume picker, the memory view (search, open, forget one, forget matching,
forget everything), /recall, and incognito from /settings and /incognito.

Real app (Pilot), real session and SQLite store, the fake OpenAI server; each
test checks the store and the next request the server receives, not only
what the screen shows.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from textual.widgets import Checkbox, Input, OptionList, Static

from newt.ui.app import NewtApp
from newt.ui.command_palette import SlashCommandProvider
from newt.ui.screens.chat import ChatScreen
from newt.ui.screens.confirm import AskScreen, ConfirmScreen
from newt.ui.screens.help import help_text
from newt.ui.screens.memory_browser import MemoryBrowserScreen, hit_prompt
from newt.ui.screens.picker import PickerScreen
from newt.ui.screens.recall_preview import RecallPreviewScreen
from newt.ui.screens.record import RecordScreen
from newt.ui.screens.settings import SettingsScreen
from newt.ui.widgets.entries import UserEntry
from tests.support.fake_openai import FakeOpenAI
from tests.support.forgetting import holds
from tests.support.homes import config
from tests.support.pilot import chat_ready, notices, say, type_and_send, until, wait_idle
from tests.support.received import last_request

SECRET = "QUIXOTICPLUM77"
CONTROL = "ZEBRAPAVEMENT31"
NASTY = "[@click=app.quit]click me[/] [b]bold"


def db_rows(where: Path, sql: str, *args: object) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(where / "newt.db")
    try:
        return list(con.execute(sql, args))
    finally:
        con.close()


def user_texts(screen: ChatScreen) -> list[str]:
    return [e.text for e in screen.log_view.entries if isinstance(e, UserEntry)]


async def confirm(pilot: Any, *keys: str) -> ConfirmScreen:
    await until(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen), "the confirmation")
    asked = pilot.app.screen
    assert isinstance(asked, ConfirmScreen)
    await pilot.press(*keys)
    return asked


async def test_rename_and_delete_from_the_resume_picker(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    app = NewtApp(config(fake_openai))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        await say(pilot, screen, "Plans for the garden shed")
        await type_and_send(pilot, "/new")
        await wait_idle(pilot, screen)
        await say(pilot, screen, f"My locker code is {SECRET}")
        session = app.session
        assert session is not None and session.conversation is not None
        open_id = session.conversation.id

        await pilot.press("ctrl+o")
        await until(
            pilot,
            lambda: isinstance(app.screen, PickerScreen) and len(app.screen.results) == 2,
            "the picker with both conversations",
        )
        picker = app.screen
        assert isinstance(picker, PickerScreen)
        assert "r renames · d deletes" in str(picker.query_one("#panel").border_subtitle)
        # typed in the search box, r and d search; the down arrow takes them to the list
        await pilot.press("down")
        assert picker.focused is picker.query_one("#picker-list", OptionList)
        shed = picker.highlighted()
        assert shed is not None and shed.title == "Plans for the garden shed"

        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, AskScreen), "the rename box")
        box = app.screen.query_one("#ask-input", Input)
        assert box.value == "Plans for the garden shed"  # prefilled with the title
        box.value = "Shed build"
        await pilot.press("enter")
        await until(pilot, lambda: picker.notice.startswith("Renamed"), "renamed")
        await until(
            pilot, lambda: {c.title for c in picker.results} >= {"Shed build"}, "list refreshed"
        )
        assert db_rows(home, "SELECT title FROM conversations WHERE id = ?", shed.id) == [
            ("Shed build",)
        ]

        # the open conversation: up to it (the focus is on the list again), d, and y once
        assert picker.focused is picker.query_one("#picker-list", OptionList)
        await pilot.press("up")
        assert (picker.highlighted() or shed).id == open_id
        await pilot.press("d")
        asked = await confirm(pilot)
        assert asked.question.startswith(f"Delete “My locker code is {SECRET}”? y/n")
        assert any("its 2 messages and the memory" in d for d in asked.details)
        assert any("notes saved in it" in d for d in asked.details)
        await pilot.press("y")
        await until(pilot, lambda: picker.notice.startswith("Deleted"), "deleted")
        assert "forgot 1 conversation" in picker.notice
        await until(pilot, lambda: [c.title for c in picker.results] == ["Shed build"], "list")
        assert db_rows(home, "SELECT id FROM conversations") == [(shed.id,)]
        assert holds(home / "newt.db", SECRET) == []

        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen, "back in the chat")
        await wait_idle(pilot, screen)
        assert session.conversation is None  # the chat goes on in a fresh conversation
        assert screen.title == "new conversation"
        assert user_texts(screen) == []
        assert any(n.startswith("Deleted “My locker code") for n in notices(screen))
        await say(pilot, screen, "What was my locker code?")
        assert SECRET not in last_request(fake_openai)


async def test_memory_view_searches_opens_and_forgets(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    app = NewtApp(config(fake_openai))
    async with app.run_test(size=(130, 44)) as pilot:
        screen = await chat_ready(pilot)
        await say(pilot, screen, f"My locker code is {SECRET}, remember it.")
        await say(pilot, screen, f"The bike lock is {CONTROL}.")
        await say(pilot, screen, f"A note with markup: {NASTY}")

        await type_and_send(pilot, "/memory search locker code")
        await until(
            pilot,
            lambda: isinstance(app.screen, MemoryBrowserScreen) and app.screen.hits,
            "the memory view with hits",
        )
        view = app.screen
        assert isinstance(view, MemoryBrowserScreen)
        assert view.search_box.value == "locker code"
        secret_hits = [h for h in view.hits if SECRET in h.content]
        assert {h.kind for h in secret_hits} == {"message", "reply"}
        first = view.hits[0]
        shown = view.options.get_option_at_index(0).prompt
        text = getattr(shown, "plain", str(shown))
        assert first.kind in text and first.conversation_title[:20] in text
        assert first.key in text

        # Enter opens the record whole
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RecordScreen), "the record")
        await until(pilot, lambda: app.screen.query("#record-content"), "its content")
        whole = app.screen.query_one("#record-content", Static).render()
        assert first.content.strip()[:40] in str(whole)
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is view, "back in the memory view")

        # f: the highlighted record (the message), confirmed once
        message = next(h for h in secret_hits if h.kind == "message")
        view.options.focus()
        view.options.highlighted = view.hits.index(message)
        await pilot.press("f")
        asked = await confirm(pilot)
        assert asked.question == "Forget this message? y/n"
        await pilot.press("y")
        await until(pilot, lambda: view.notice.startswith("forgot 1 message"), "forgot one")
        contents = [c for (c,) in db_rows(home, "SELECT content FROM memory_records")]
        assert sum(SECRET in c for c in contents) == 1  # the reply still says it
        users = [u for (u,) in db_rows(home, "SELECT user FROM turns WHERE kind = 'turn'")]
        assert not any(SECRET in u for u in users)

        # F: every record matching the search, listed and counted first
        view.search_box.value = SECRET
        await until(pilot, lambda: view.hits and SECRET in view.hits[0].content, "search")
        await pilot.press("down")
        await pilot.press("F")
        asked = await confirm(pilot)
        assert asked.question == f"Forget 1 record holding “{SECRET}”? y/n"
        assert asked.details[0].startswith("reply · ")
        assert asked.details[0].endswith("(holds more: all of it goes)")  # "remember it."
        assert asked.details[1].startswith("s forgets only the sentences")
        await pilot.press("y")
        await until(pilot, lambda: "1 memory record" in view.notice, "forgot matching")
        await until(pilot, lambda: not view.hits, "no hit left")
        assert holds(home / "newt.db", SECRET) == []
        assert holds(home / "newt.db", CONTROL), "what was not forgotten stays"

        # record text is shown literally, never as markup
        view.search_box.value = "markup"
        await until(pilot, lambda: any(NASTY in h.content for h in view.hits), "the markup hit")
        nasty = next(h for h in view.hits if NASTY in h.content)
        assert "[@click=app.quit]" in hit_prompt(nasty, "markup").plain
        assert app.is_running

        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen, "back in the chat")
        await wait_idle(pilot, screen)
        assert user_texts(screen)[0] == "[forgotten]"  # the log was drawn again
        assert any(n.startswith("forgot 1 message") for n in notices(screen))
        await say(pilot, screen, "What is my locker code?")
        assert SECRET not in last_request(fake_openai)
        assert "[forgotten]" in last_request(fake_openai)
        assert CONTROL in last_request(fake_openai)


async def test_forget_matching_can_keep_the_rest_of_a_message(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    """In the memory view, F offers s, forgetting only the sentences
    holding the words; the rest of the message stays, the cut marked."""
    app = NewtApp(config(fake_openai))
    async with app.run_test(size=(130, 44)) as pilot:
        screen = await chat_ready(pilot)
        await say(
            pilot, screen, "My sister lives in Tromsø, I'm allergic to peanuts, my dog is Pixel"
        )
        await type_and_send(pilot, "/memory search peanuts")
        await until(
            pilot, lambda: isinstance(app.screen, MemoryBrowserScreen) and app.screen.hits, "hits"
        )
        view = app.screen
        assert isinstance(view, MemoryBrowserScreen)
        await pilot.press("down")
        await pilot.press("F")
        asked = await confirm(pilot)
        assert "s only the sentences" in str(asked.query_one("#confirm-panel").border_subtitle)
        await pilot.press("s")
        await until(pilot, lambda: "kept what did not hold the words" in view.notice, "cut")
        users = [u for (u,) in db_rows(home, "SELECT user FROM turns WHERE kind = 'turn'")]
        assert users == ["My sister lives in Tromsø, [forgotten], my dog is Pixel"]
        assert holds(home / "newt.db", "peanuts") == []


async def test_forget_everything_needs_the_word_typed(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    app = NewtApp(config(fake_openai))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        await say(pilot, screen, f"My locker code is {SECRET}.")
        # the palette's "Search memory" opens the view, with every record listed
        provider = SlashCommandProvider(screen)
        hits = [h async for h in provider.search("Search memory")]
        best = max(hits, key=lambda h: h.score)
        assert best.text == "Search memory"
        callback = best.command
        assert callback is not None
        callback()
        await until(
            pilot,
            lambda: isinstance(app.screen, MemoryBrowserScreen) and app.screen.hits,
            "the memory view",
        )
        view = app.screen
        assert isinstance(view, MemoryBrowserScreen)
        await pilot.press("down", "ctrl+x")
        asked = await confirm(pilot)
        assert asked.typed == "forget"
        word = asked.query_one("#confirm-word", Input)
        word.value = "y"  # a y is not enough
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert app.screen is asked
        word.value = "forget"
        await pilot.press("enter")
        await until(pilot, lambda: view.notice.startswith("forgot 1 conversation"), "forgot all")
        assert db_rows(home, "SELECT count(*) FROM conversations") == [(0,)]
        assert db_rows(home, "SELECT count(*) FROM memory_records") == [(0,)]
        assert holds(home / "newt.db", SECRET) == []
        await pilot.press("escape")
        await wait_idle(pilot, screen)
        assert app.session is not None and app.session.conversation is None
        assert user_texts(screen) == [] and screen.title == "new conversation"


async def test_recall_shows_the_capsule_of_an_old_message(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    app = NewtApp(config(fake_openai))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        await say(pilot, screen, f"My locker code is {SECRET}, please remember it.")
        await type_and_send(pilot, "/new")
        await wait_idle(pilot, screen)
        await say(pilot, screen, "Something else entirely.")
        sent = len(fake_openai.chat_requests)

        await type_and_send(pilot, "/recall what is my locker code")
        await until(pilot, lambda: isinstance(app.screen, RecallPreviewScreen), "the preview")
        preview = app.screen
        assert isinstance(preview, RecallPreviewScreen) and preview.report is not None
        capsule = next(c for c in preview.report.capsules if SECRET in c.excerpt)
        rows = preview.query_one("#recall-list", OptionList)
        lines = [str(rows.get_option_at_index(i).prompt) for i in range(rows.option_count)]
        line = next(x for x in lines if SECRET in x)
        assert capsule.retrieval_key in line and "you, " in line  # key, who and when
        assert len(fake_openai.chat_requests) == sent  # a look sends nothing
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen, "back")

        await type_and_send(pilot, "/recall xylophone quokka")
        await until(pilot, lambda: isinstance(app.screen, RecallPreviewScreen), "the preview")
        header = app.screen.query_one("#recall-header", Static).render()
        assert "no capsules" in str(header)
        assert not app.screen.query("#recall-list")


async def test_incognito_from_settings_and_the_command(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    app = NewtApp(config(fake_openai))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        await say(pilot, screen, f"My locker code is {SECRET}.")
        session = app.session
        assert session is not None and session.conversation is not None
        conv_id = session.conversation.id
        indexed = "SELECT count(*) FROM memory_records WHERE conversation_id = ?"
        assert db_rows(home, indexed, conv_id) == [(2,)]
        assert "incognito" not in str(screen.sub_title)

        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, SettingsScreen), "the settings")
        box = app.screen.query_one("#settings-incognito", Checkbox)
        assert str(box.label) == "Incognito: save nothing of this conversation" and not box.value
        box.value = True
        await pilot.press("ctrl+s")
        await until(
            pilot, lambda: "incognito: nothing saved" in str(screen.sub_title), "the header says so"
        )
        await wait_idle(pilot, screen)
        assert session.incognito
        said = [n for n in notices(screen) if n.startswith("Incognito")]
        assert said and "nothing of this conversation is saved from now on" in said[-1]
        assert "forgot 1 conversation, 2 messages, 2 memory records" in said[-1]
        assert db_rows(home, "SELECT count(*) FROM conversations WHERE id = ?", conv_id) == [(0,)]
        assert holds(home / "newt.db", SECRET) == []  # the bytes are gone

        await say(pilot, screen, "one more thing, between us")  # the conversation goes on
        assert SECRET in json.dumps(fake_openai.chat_requests[-1].body["messages"])
        assert holds(home / "newt.db", "between us") == []

        await type_and_send(pilot, "/incognito off")
        await until(pilot, lambda: "incognito" not in str(screen.sub_title), "incognito off")
        await wait_idle(pilot, screen)
        assert not session.incognito and session.conversation is None  # a new, saved one
        assert any("was not saved and is gone" in n for n in notices(screen))
        await type_and_send(pilot, "/incognito")  # no argument toggles
        await until(pilot, lambda: "incognito" in str(screen.sub_title), "toggled on again")
        await wait_idle(pilot, screen)
        assert session.incognito


def test_help_names_the_memory_view_and_the_new_commands() -> None:
    text = help_text().plain
    for needle in ("/memory search [QUERY]", "/recall <text>", "/incognito [on|off]"):
        assert needle in text
    assert "Search memory" in text and "forget everything" in text
