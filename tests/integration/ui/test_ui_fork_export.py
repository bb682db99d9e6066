"""/fork says what it did and names the fork apart; /export keeps the title's letters.
Real app (Pilot), real session and store, fake server."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from newt.store.turn_edits import fork_title
from newt.ui.app import NewtApp
from newt.ui.screens.chat_commands import title_slug
from tests.support.fake_openai import FakeOpenAI
from tests.support.homes import config_for
from tests.support.pilot import chat_ready, notices, type_and_send, wait_idle


async def test_fork_is_confirmed_in_the_log_and_titled_apart_then_exported(
    home: Path,
    fake_openai: FakeOpenAI,
) -> None:
    app = NewtApp(config_for(fake_openai))
    async with app.run_test(size=(110, 34)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "Trip to Tromsø")
        await wait_idle(pilot, screen)
        await type_and_send(pilot, "And the ferry?")
        await wait_idle(pilot, screen)
        await type_and_send(pilot, "/fork 1")
        for _ in range(100):
            if any("Forked" in n for n in notices(screen)):
                break
            await pilot.pause(0.05)
        said = [n for n in notices(screen) if "Forked" in n]
        assert said and said[-1].startswith(
            "Forked at turn 1 into a new conversation, “Trip to Tromsø (fork)”"
        )
        assert "the original is unchanged" in said[-1]
        assert screen.title == "Trip to Tromsø (fork)"

        await type_and_send(pilot, "/export")
        await wait_idle(pilot, screen)
        await pilot.pause(0.2)
    con = sqlite3.connect(home / "newt.db")
    titles = sorted(t for (t,) in con.execute("SELECT title FROM conversations"))
    con.close()
    assert titles == ["Trip to Tromsø", "Trip to Tromsø (fork)"]
    exported = [p.name for p in Path.cwd().glob("newt-*.md")]
    assert len(exported) == 1 and exported[0].endswith("-trip-to-tromsø-fork.md"), exported


def test_fork_titles_count_up() -> None:
    assert fork_title("Trip") == "Trip (fork)"
    assert fork_title("Trip (fork)") == "Trip (fork 2)"
    assert fork_title("Trip (fork 2)") == "Trip (fork 3)"
    assert fork_title("") == ""


def test_export_names_keep_letters_and_stay_in_their_directory() -> None:
    assert title_slug("Trip to Tromsø and Ålesund!") == "trip-to-tromsø-and-ålesund"
    assert title_slug("Привет мир") == "привет-мир"
    assert title_slug("../../etc/passwd") == "etc-passwd"  # no separators, no dot-dot
    assert title_slug("a\x1b[31mb\x00c") == "a-31mb-c"  # control characters go
    assert title_slug("...") == "conversation"
