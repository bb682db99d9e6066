"""Appearance pinned with pytest-textual-snapshot (SVGs in tests/__snapshots__/).

The scripted session gives fixed figures and the picker's times read "just
now", so nothing in view depends on the clock or on random ids.
"""

from __future__ import annotations

from typing import Any

from newt.ui.open_request import OpenRequest
from tests.support.fake_session import FakeSession
from tests.support.fakes.state import make_turn, sample_report
from tests.support.fakes.turns import Step
from tests.support.pilot import chat_ready, make_app, type_and_send, wait_idle

RECORD = (
    "[CONTEXT COMPACTION — REFERENCE ONLY]\nreference only\n\n"
    "The user planned a trip to the lake cabin.\n--- END OF CONTEXT SUMMARY ---"
)


def session_with_history() -> FakeSession:
    session = FakeSession()
    session.state.add_conversation(
        "a" * 32,
        "Planning the cabin trip",
        [
            make_turn(1, "Where is the cabin?", "By the **lake**, two hours north."),
            make_turn(2, RECORD, "", kind="compaction"),
            make_turn(3, "What should I pack?", "- boots\n- a warm coat\n- `matches`"),
        ],
    )
    session.state.add_conversation("b" * 32, "Sourdough starter", [make_turn(1, "flour?", "rye")])
    session.turns.script(
        Step(
            text="It is about **120 km** away.",
            report=sample_report(),
            tool=("recall_memory", {"query": "cabin distance"}, "2 capsules"),
        )
    )
    return session


async def steady(pilot: Any) -> None:
    """No cursor in a snapshot: its blink phase depends on timing."""
    for screen in pilot.app.screen_stack:
        for area in screen.query("#prompt-area"):
            area.cursor_blink = False
        for log in screen.query("#log"):
            log.focus()  # the prompt loses focus, so no cursor is drawn at all
    await pilot.pause()
    for screen in pilot.app.screen_stack:
        for area in screen.query("#prompt-area"):
            area.refresh()  # drop any line cached while the cursor was showing
    await pilot.pause()


async def _send_one(pilot: Any) -> None:
    screen = await chat_ready(pilot)
    await wait_idle(pilot, screen)
    await type_and_send(pilot, "How far is it?")
    await wait_idle(pilot, screen)
    await steady(pilot)


def test_main_screen(snap_compare: Any) -> None:
    app = make_app(session_with_history(), opening=OpenRequest(resume="aaa"))
    assert snap_compare(app, terminal_size=(100, 32), run_before=_send_one)


def test_sidebar_wide(snap_compare: Any) -> None:
    app = make_app(session_with_history(), opening=OpenRequest(resume="aaa"))
    assert snap_compare(app, terminal_size=(140, 36), run_before=_send_one)


def test_memory_panel(snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        await _send_one(pilot)
        await pilot.press("ctrl+g")
        await steady(pilot)

    app = make_app(session_with_history(), opening=OpenRequest(resume="aaa"))
    assert snap_compare(app, terminal_size=(110, 32), run_before=run_before)


def test_resume_picker(snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        screen = await chat_ready(pilot)
        await wait_idle(pilot, screen)
        await steady(pilot)
        await pilot.press("ctrl+o")
        await pilot.pause(0.3)
        search = pilot.app.screen.query_one("#picker-search")
        search.cursor_blink = False  # focused and not blinking: always drawn
        search.refresh()
        await pilot.pause()

    app = make_app(session_with_history(), opening=OpenRequest(resume="aaa"))
    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)


def test_slash_menu(snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        await chat_ready(pilot)
        await pilot.press("slash", "n")
        await steady(pilot)

    app = make_app(FakeSession())
    assert snap_compare(app, terminal_size=(100, 24), run_before=run_before)
