"""Folding is visible: the real app against the fake server.

A 1024-token window at a 0.5 threshold gives a 512-token budget: three short
turns fit, a long reply folds them (one line, "3 earlier turns folded into
the summary"), and each later turn folds one more. The summarizer's request
(recognised by the turns it is handed) gets SUMMARY, except the one
that would summarize the fifth turn: it fails, so that fold stays owed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from newt.ui.app import NewtApp
from newt.ui.open_request import OpenRequest
from newt.ui.screens.chat import ChatScreen
from newt.ui.screens.memory import MemoryScreen
from newt.ui.screens.record import FoldScreen
from newt.ui.widgets.chat_log import ChatLog
from newt.ui.widgets.entries import CompactionEntry
from newt.ui.widgets.messages import FoldLine
from tests.support.fake_openai import ErrorReply, FakeOpenAI, Reply
from tests.support.homes import config_for
from tests.support.pilot import chat_ready, type_and_send, wait_idle
from tests.support.summary_requests import is_summary_request

LONG = "word " * 240  # ~300 tokens: with it nothing older fits the budget (it alone does)
SHORT = "word " * 60
SUMMARY = "SUMMARY of alpha"
# Markup and a terminal escape in the first turn: shown literally, never live.
FIRST = "alpha first question [@click=app.quit]boom[/] \x1b]0;pwned\x07end"
TURNS = (FIRST, "bravo second", "charlie third", "delta long fourth", "echo fifth", "foxtrot long")
# (index in the log's entries, line) of every fold, as the log shows them
EXPECTED = [
    (8, "3 earlier turns folded into the summary · turns 1–3"),
    (11, "1 earlier turn folded into the summary · turn 4"),
    (14, "1 earlier turn folded into the summary · turn 5"),
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A NEWT_HOME of its own, and the working directory in tmp (as test_ui_real)."""
    monkeypatch.setenv("NEWT_HOME", str(tmp_path / "home"))
    for var in ("NEWT_CONFIG", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def responder(request: dict[str, Any]) -> Reply | ErrorReply:
    last = request["messages"][-1]["content"]
    text = last if isinstance(last, str) else ""
    if is_summary_request(request):
        if "echo fifth" in text:
            return ErrorReply(500, {"error": {"message": "summary slot crashed"}})
        return Reply(text=SUMMARY)
    return Reply(text=LONG if "long" in text else SHORT, chunk_size=400)


def make_app(server: FakeOpenAI, **kwargs: Any) -> NewtApp:
    server.responder = responder
    return NewtApp(config_for(server, context_tokens=1024, threshold_pct=0.5), **kwargs)


async def until(pilot: Any, check: Callable[[], bool], what: str) -> None:
    for _ in range(300):
        if check():
            return
        await pilot.pause(0.02)
    raise AssertionError(what)


def fold_lines(screen: ChatScreen) -> list[tuple[int, str]]:
    entries = screen.query_one(ChatLog).entries
    return [(i, e.line) for i, e in enumerate(entries) if isinstance(e, CompactionEntry)]


def text_of(screen: Any, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def chat(pilot: Any, app: NewtApp) -> ChatScreen:
    """Send TURNS, each after the previous turn's summary landed (or failed),
    so the records, and with them what folds, never depend on timing."""
    screen = await chat_ready(pilot)
    session: Any = app.session
    for text in TURNS:
        await type_and_send(pilot, text)
        await wait_idle(pilot, screen)
        await until(pilot, lambda: not session.summaries.running, "summary never settled")
    await until(
        pilot,
        lambda: all(
            e.fold for e in screen.query_one(ChatLog).entries if isinstance(e, CompactionEntry)
        ),
        "a live fold line was never resolved",
    )
    return screen


async def test_a_fold_shows_its_line_with_the_count_where_it_happened(
    home: Path, fake_openai: FakeOpenAI
) -> None:
    app = make_app(fake_openai)
    async with app.run_test(size=(110, 36)) as pilot:
        screen = await chat(pilot, app)
        assert fold_lines(screen) == EXPECTED
        entries = screen.query_one(ChatLog).entries
        # right after the reply of the turn whose reply made it fold
        assert type(entries[7]).__name__ == "AssistantEntry"
        assert [type(e).__name__ for e in entries[:8]] == ["UserEntry", "AssistantEntry"] * 4
        rendered = [str(w.render()) for w in screen.query(FoldLine)]
        assert rendered == [f"╌ {line}" for _, line in EXPECTED]
        assert all(w.has_class("compaction") for w in screen.query(FoldLine))


async def test_opening_a_fold_shows_its_summary_and_the_turns_it_covers(
    home: Path, fake_openai: FakeOpenAI
) -> None:
    app = make_app(fake_openai)
    async with app.run_test(size=(110, 36)) as pilot:
        screen = await chat(pilot, app)
        first = screen.query(FoldLine).first()
        first.focus()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, FoldScreen), "enter opened nothing")
        fold_screen = app.screen
        await pilot.pause(0.1)  # the screen reads the log again
        meta = text_of(fold_screen, "#record-meta")
        assert "3 turns (1–3)" in meta and "summary written" in meta
        turns = text_of(fold_screen, "#fold-turns").splitlines()
        assert len(turns) == 3
        assert turns[0].startswith("turn 1 · ") and "alpha first question" in turns[0]
        assert turns[1].startswith("turn 2 · ") and turns[1].endswith("bravo second")
        assert turns[2].startswith("turn 3 · ") and turns[2].endswith("charlie third")
        # model and user text is cleaned and never markup: shown as typed, no escape
        assert "[@click=app.quit]boom[/]" in turns[0] and "\x1b" not in turns[0]
        assert SUMMARY in text_of(fold_screen, "#fold-summary")
        await pilot.press("escape")
        assert app.screen is screen

        # the newest fold: a click opens it; its summary failed, so it is owed
        last = list(screen.query(FoldLine))[-1]
        last.scroll_visible(animate=False)
        await pilot.pause()
        await pilot.click(last)
        await until(pilot, lambda: isinstance(app.screen, FoldScreen), "a click opened nothing")
        await pilot.pause(0.1)
        meta = text_of(app.screen, "#record-meta")
        assert "1 turn (5)" in meta and "summary not written yet" in meta
        assert text_of(app.screen, "#fold-turns").endswith("echo fifth")
        # the record as it stands: the earlier summary, then what is still owed
        summary = text_of(app.screen, "#fold-summary")
        assert summary.startswith(SUMMARY) and "No summary written yet: 2 message(s)" in summary


async def test_reopening_the_conversation_shows_the_same_lines(
    home: Path, fake_openai: FakeOpenAI
) -> None:
    app = make_app(fake_openai)
    async with app.run_test(size=(110, 36)) as pilot:
        screen = await chat(pilot, app)
        live = fold_lines(screen)
        live_kinds = [type(e).__name__ for e in screen.query_one(ChatLog).entries]
    assert live == EXPECTED

    app2 = make_app(fake_openai, opening=OpenRequest(continue_latest=True))
    async with app2.run_test(size=(110, 36)) as pilot:
        screen = await chat_ready(pilot)
        await wait_idle(pilot, screen)
        await until(pilot, lambda: bool(fold_lines(screen)), "the reopened log has no folds")
        assert fold_lines(screen) == live
        assert [type(e).__name__ for e in screen.query_one(ChatLog).entries] == live_kinds
        # the summary rows that only put a written summary in add no line
        history = await app2.session.edits.history()  # type: ignore[union-attr]
        assert sum(h.kind == "compaction" for h in history) > len(live)


async def test_memory_lists_the_folds_of_the_conversation(
    home: Path, fake_openai: FakeOpenAI
) -> None:
    app = make_app(fake_openai)
    async with app.run_test(size=(110, 40)) as pilot:
        await chat(pilot, app)
        await type_and_send(pilot, "/memory")
        await until(pilot, lambda: isinstance(app.screen, MemoryScreen), "/memory opened nothing")
        await pilot.pause()
        lines = text_of(app.screen, "#memory-folds").splitlines()
        assert lines == [
            "3 in this conversation · 1 summary still owed",
            "1 · just now · 3 turns (1–3) · summary written just now",
            "2 · just now · 1 turn (4) · summary written just now",
            "3 · just now · 1 turn (5) · summary still owed",
        ]
        await pilot.press("escape")

    # a new conversation has none
    app2 = make_app(fake_openai)
    async with app2.run_test(size=(110, 40)) as pilot:
        await chat_ready(pilot)
        await pilot.press("ctrl+g")
        await until(pilot, lambda: isinstance(app2.screen, MemoryScreen), "ctrl+g opened nothing")
        await pilot.pause()
        assert text_of(app2.screen, "#memory-folds").startswith("none yet")


def row(row_id: int, kind: str = "turn", **fields: Any) -> Any:
    from newt.agent.display import HistoryEntry

    fields.setdefault("status", "complete")
    fields.setdefault("user", f"words of {row_id}")
    fields.setdefault("assistant", "" if kind == "compaction" else "a reply")
    return HistoryEntry(id=row_id, kind=kind, created_at=float(row_id), **fields)


def test_a_fold_is_summarized_at_the_first_record_that_no_longer_owes_its_turns() -> None:
    """What the fold screen and /memory say, from the log alone: a summary
    that lands while a later fold is owed covers the earlier fold only, and a
    record that only puts a summary in is no fold of its own."""
    from newt.agent.display import fold_views
    from newt.ui.widgets.entries import fold_size, turn_span

    owed = "No summary written yet: {} message(s) were removed in 1 step(s)."
    history = [
        row(1),
        row(2),
        row(3, status="failed"),  # never in a working set, so never folded
        row(4),
        row(5, "compaction", resident_turns=1, summary=owed.format(4)),
        row(6),
        row(7, "compaction", resident_turns=1, summary="S1\n\n" + owed.format(2)),
        row(8, "compaction", resident_turns=1, summary="S2"),
    ]
    folds = fold_views(history)
    assert [(f.row_id, f.shown, f.number) for f in folds] == [
        (5, True, 1),
        (7, True, 2),
        (8, False, 0),
    ]
    assert [[t.number for t in f.turns] for f in folds] == [[1, 2], [4], []]
    assert [f.summary_written_at for f in folds] == [7.0, 8.0, 8.0]
    assert {f.current_summary for f in folds} == {"S2"}
    assert turn_span(folds[0].turns + folds[1].turns) == "turns 1–2, 4"
    assert fold_size(folds[1].turns) == "1 turn (4)"
    # before S2 landed the second fold was owed
    assert fold_views(history[:-1])[1].summary_written_at is None
