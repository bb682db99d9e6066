"""Importing from the TUI: the palette's "Import conversations…", the
import screen (a typed path, or a database found at its app's default path),
the summary `newt import` prints, and a malformed file that imports nothing.

Real app (Pilot), real session and SQLite store, the fake OpenAI server; each
test checks the store, and one the next request the server receives.
"""

from __future__ import annotations

import io
import shutil
import sqlite3
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, OptionList, ProgressBar, Static

from newt.cli.import_command import run_import
from newt.ui.app import NewtApp
from newt.ui.command_palette import SlashCommandProvider
from newt.ui.screens.chat import ChatScreen
from newt.ui.screens.import_history import ImportScreen
from tests.support.fake_openai import FakeOpenAI
from tests.support.homes import config
from tests.support.paths import TESTS
from tests.support.pilot import chat_ready, notices, say, until, wait_idle
from tests.support.received import last_request

FIXTURES = TESTS / "fixtures" / "import"
CHATGPT = FIXTURES / "chatgpt_conversations.json"
TABLES = ("conversations", "turns", "memory_records", "imports")


@pytest.fixture(autouse=True)
def no_apps_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The apps' default paths point into the test's own directory (empty at first)."""
    apps = tmp_path / "apps"
    monkeypatch.setenv("XDG_DATA_HOME", str(apps / "share"))
    monkeypatch.setenv("OTERM_DATA_DIR", str(apps / "oterm"))
    monkeypatch.setenv("LLM_USER_PATH", str(apps / "llm"))
    return apps


def counts(where: Path) -> tuple[int, ...]:
    con = sqlite3.connect(where / "newt.db")
    try:
        return tuple(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES)
    finally:
        con.close()


async def open_from_palette(pilot: Any, screen: ChatScreen) -> ImportScreen:
    provider = SlashCommandProvider(screen)
    hits = [h async for h in provider.search("Import conversations")]
    best = max(hits, key=lambda h: h.score)
    assert best.text == "Import conversations…"
    assert best.command is not None
    best.command()
    return await import_screen(pilot)


async def import_screen(pilot: Any) -> ImportScreen:
    def shown() -> bool:
        view = pilot.app.screen
        return isinstance(view, ImportScreen) and bool(view.query("#import-path"))

    await until(pilot, shown, "the import screen")
    view = pilot.app.screen
    assert isinstance(view, ImportScreen)
    return view


async def import_typed(pilot: Any, view: ImportScreen, path: Path) -> list[str]:
    box = view.query_one("#import-path", Input)
    box.value = str(path)
    await pilot.press("enter")
    await until(pilot, lambda: view.summary and not view.running, "the import's summary", 400)
    return view.summary


async def cli_summary(tmp_path: Path, path: Path) -> list[str]:
    """What `newt import PATH` prints for the same file into a store of its own."""
    err = io.StringIO()
    await run_import(tmp_path / "cli.db", path, None, dry_run=False, err=err)
    return err.getvalue().splitlines()


async def test_palette_import_ends_with_the_cli_summary_and_recall_uses_it(
    home: Path,
    fake_openai: FakeOpenAI,
    tmp_path: Path,
) -> None:
    expected = await cli_summary(tmp_path, CHATGPT)
    assert expected[0].startswith("newt import (chatgpt): imported 1 conversation(s)")
    app = NewtApp(config(fake_openai))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        view = await open_from_palette(pilot, screen)
        assert view.query_one("#import-none-found", Static)  # nothing at the apps' paths
        summary = await import_typed(pilot, view, CHATGPT)
        assert summary == expected  # the same lines as the CLI's, refusal and why included
        assert any("refused cg-2" in line for line in summary)
        bar = view.query_one("#import-progress", ProgressBar)
        assert bar.display and bar.progress == bar.total == 2  # both conversations gone through
        shown = str(view.query_one("#import-summary", Static).render())
        assert "imported 1 conversation(s)" in shown
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen, "back in the chat")
        assert any("imported 1 conversation(s)" in n for n in notices(screen))
        titles = [r[0] for r in db_titles(home)]
        assert "Paris trip" in titles

        # the imported history answers a question asked in a new conversation
        await say(pilot, screen, "When do I fly to Paris?")
        assert "I fly to Paris on May 3rd." in last_request(fake_openai)
        # the sidebar dates the capsule the day it was said in ChatGPT, not today
        capsules = screen.sidebar.query_one("#capsules", OptionList)
        shown = [str(capsules.get_option_at_index(i).prompt) for i in range(capsules.option_count)]
        flight = next(text for text in shown if "May 3rd" in text)
        said = datetime.fromtimestamp(1700000100.0)  # the fixture's u1, November 2023
        assert f"{said.day} {said:%b %Y}" in flight
        assert f"{date.today():%b %Y}" not in flight

        # again: nothing added twice, and the summary says it was skipped
        before = counts(home)
        view = await open_from_palette(pilot, screen)
        summary = await import_typed(pilot, view, CHATGPT)
        assert summary[0].startswith("newt import (chatgpt): imported 0 conversation(s)")
        assert "skipped 1 already there" in summary[0]
        assert counts(home) == before


def db_titles(where: Path) -> list[tuple[str]]:
    con = sqlite3.connect(where / "newt.db")
    try:
        return list(con.execute("SELECT title FROM conversations"))
    finally:
        con.close()


async def test_a_malformed_file_says_what_is_wrong_and_imports_nothing(
    home: Path,
    fake_openai: FakeOpenAI,
    tmp_path: Path,
) -> None:
    broken = tmp_path / "conversations.json"
    broken.write_text('[{"title": "half", "mapping": {', encoding="utf-8")
    app = NewtApp(config(fake_openai))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        await say(pilot, screen, "hello before the import")
        before = counts(home)
        view = await open_from_palette(pilot, screen)
        (said,) = await import_typed(pilot, view, broken)
        assert said.startswith("Import failed: ") and str(broken) in said
        assert "not JSON" in said and said.endswith("nothing was imported.")
        assert "Import failed" in str(view.query_one("#import-summary", Static).render())
        assert counts(home) == before
        # /import PATH does the same from the prompt, without the screen
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen, "back in the chat")
        screen.prompt.set_text(f"/import {broken}")
        await pilot.press("enter")
        await wait_idle(pilot, screen)
        await until(pilot, lambda: any("Import failed" in n for n in notices(screen)), "the error")
        assert counts(home) == before


async def test_a_database_found_at_its_apps_path_is_offered_and_imported(
    home: Path,
    fake_openai: FakeOpenAI,
    no_apps_here: Path,
) -> None:
    elia = no_apps_here / "share" / "elia" / "elia.sqlite"
    elia.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "elia.sqlite", elia)
    app = NewtApp(config(fake_openai))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await chat_ready(pilot)
        screen.prompt.set_text("/import")  # the slash command opens the same screen
        await pilot.press("enter")
        view = await import_screen(pilot)
        found = view.query_one("#import-found", OptionList)
        assert found.option_count == 1
        assert "Elia" in str(found.get_option_at_index(0).prompt)
        assert str(elia) in str(found.get_option_at_index(0).prompt)
        found.focus()
        found.highlighted = 0
        await pilot.press("enter")
        await until(pilot, lambda: view.summary and not view.running, "the summary", 400)
        assert view.summary[0].startswith("newt import (elia): imported ")
        assert not view.summary[0].startswith("newt import (elia): imported 0")
        assert counts(home)[3] >= 1  # the imports table holds what came in
