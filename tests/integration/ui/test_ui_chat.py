"""Pilot tests of the chat screen with a scripted session (exact, fast)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static
from textual.widgets._footer import FooterKey

from newt.ui.open_request import OpenRequest
from newt.ui.widgets.chat_log import ChatLog
from newt.ui.widgets.entries import ErrorEntry, NoticeEntry
from newt.ui.widgets.messages import (
    STOP_HINT,
    AssistantMessage,
    ErrorMessage,
    NoticeMessage,
    ToolCallBlock,
)
from tests.support.fake_session import FakeSession
from tests.support.fakes.state import make_turn, sample_report
from tests.support.fakes.turns import Step
from tests.support.pilot import chat_ready, make_app, type_and_send, wait_idle


async def test_send_streams_reply_and_updates_meter() -> None:
    session = FakeSession()
    session.turns.script(Step(text="Hello **there**, friend.", report=sample_report()))
    app = make_app(session)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "hi")
        await wait_idle(pilot, screen)
        assert session.turns.sent == ["hi"]
        reply = screen.query_one(AssistantMessage)
        assert reply.entry.text == "Hello **there**, friend."
        assert reply.entry.status == "complete"
        assert screen.prompt.text == ""
        assert screen.title == "hi"
        assert screen.sidebar.display  # wide terminal: visible by default
        header = str(screen.query_one("#evidence-header").render())
        assert "retained 96/1,024 tokens · 2 capsules · 3 dropped" in header
        meter = screen.query_one("#meter")
        assert "/6,553" in str(meter.render())
    assert session.closed  # the session (and the store it owns) closed with the app
    assert session.closed


async def test_enter_with_empty_prompt_does_nothing_and_ctrl_j_inserts_newline() -> None:
    session = FakeSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await pilot.press("enter")
        await pilot.press("a", "ctrl+j", "b")
        assert screen.prompt.text == "a\nb"
        assert session.turns.sent == []


async def test_prompt_history_with_up_down() -> None:
    session = FakeSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        for text in ("first", "second"):
            await type_and_send(pilot, text)
            await wait_idle(pilot, screen)
        await pilot.press("up")
        assert screen.prompt.text == "second"
        await pilot.press("up")
        assert screen.prompt.text == "first"
        await pilot.press("down")
        assert screen.prompt.text == "second"
        await pilot.press("down")
        assert screen.prompt.text == ""


async def test_escape_cancels_and_keeps_partial_reply() -> None:
    session = FakeSession()
    session.turns.script(Step(text="word " * 200, chunk=5, gate=asyncio.Event()))
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "long one")
        await pilot.pause(0.05)
        assert screen.query_one(AssistantMessage).entry.text == "word "
        await pilot.press("escape")
        await wait_idle(pilot, screen)
        reply = screen.query_one(AssistantMessage)
        assert reply.entry.status == "interrupted"
        assert 0 < len(reply.entry.text) < len("word " * 200)
        cut = session.turns.interrupted
        assert cut and reply.entry.text.startswith(cut[0][:5])
        assert reply.has_class("-interrupted")


async def test_ctrl_c_stops_a_streaming_reply_and_the_footer_says_so() -> None:
    """Ctrl+c while a reply streams stops it (it used to only say
    "press ctrl+q to quit" while the reply went on); the footer's stop hint
    shows only then, and idle ctrl+c stops nothing and quits nothing."""
    session = FakeSession()
    session.turns.script(Step(text="word " * 200, chunk=5, gate=asyncio.Event()), Step(text="fine"))
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        hint = screen.query_one("#stop-hint", Static)
        assert not hint.display
        await type_and_send(pilot, "long one")
        await pilot.pause(0.05)
        assert hint.display and "ctrl+c" in str(hint.render())
        await pilot.press("ctrl+c")
        await wait_idle(pilot, screen)
        reply = screen.query_one(AssistantMessage)
        assert reply.entry.status == "interrupted" and session.turns.interrupted
        assert not hint.display
        assert not any("quit" in n.message for n in app._notifications)
        await type_and_send(pilot, "again")
        await wait_idle(pilot, screen)
        assert screen.query(AssistantMessage).last().entry.status == "complete"
        await pilot.press("ctrl+c")  # idle: the app's own answer, nothing stopped
        await pilot.pause()
        assert app.is_running
        assert screen.query(AssistantMessage).last().entry.status == "complete"


async def test_a_message_larger_than_the_window_stays_in_the_box() -> None:
    """A paste larger than the window is not sent (the server would
    refuse it after a long wait): the log says so with both numbers and what
    can help, the text stays; ctrl+c clears it in one key, ctrl+z brings it
    back, and a message that fits goes as usual."""
    session = FakeSession()
    session.turns.script(Step(text="fine"))
    app = make_app(session)
    paste = "All work and no play makes Jack a dull boy. " * 1200  # ~13,000 tokens
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await chat_ready(pilot)
        screen.prompt.set_text(paste)
        await pilot.press("enter")
        await pilot.pause()
        assert session.turns.sent == [] and not screen.busy
        assert screen.prompt.text == paste
        said = [e.text for e in screen.log_view.entries if isinstance(e, NoticeEntry)]
        assert said and "this message alone is about 13,200 tokens" in said[-1]
        assert "window of 8,192 tokens (6,553 for the conversation" in said[-1]
        assert "split it into parts" in said[-1] and "/model" in said[-1]

        screen.prompt.focus_prompt()
        await pilot.press("ctrl+c")  # one key, however long
        assert screen.prompt.text == ""
        assert not any("quit" in n.message for n in app._notifications)
        await pilot.press("ctrl+z")
        assert screen.prompt.text == paste
        await pilot.press("ctrl+c")
        await type_and_send(pilot, "a short one")
        await wait_idle(pilot, screen)
        assert session.turns.sent == ["a short one"]


async def test_a_reply_starting_and_ending_leaves_the_footer_alone() -> None:
    """Esc is offered on the streaming reply's status line, not in the footer,
    so a turn does not re-compose the footer twice (keys waited for it)."""
    session = FakeSession()
    gate = asyncio.Event()
    session.turns.script(Step(text="word " * 50, chunk=5, gate=gate))
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        footer_keys = list(screen.query(FooterKey))
        await type_and_send(pilot, "long one")
        await pilot.pause(0.05)
        status = screen.query_one(AssistantMessage).query_one(".status", Static)
        assert STOP_HINT in str(status.render())
        assert "Stop reply" not in " ".join(str(k.render()) for k in screen.query(FooterKey))
        gate.set()
        await wait_idle(pilot, screen)
        assert not status.display
        assert list(screen.query(FooterKey)) == footer_keys  # the same widgets: no recompose
        await pilot.press("escape")  # nothing to stop: no error, nothing changes
        assert screen.query_one(AssistantMessage).entry.status == "complete"


async def test_error_restores_prompt_and_retry_resends() -> None:
    session = FakeSession()
    session.turns.script(
        Step(error="backend said 503", retryable=True), Step(text="second time lucky")
    )
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "please work")
        await wait_idle(pilot, screen)
        error = screen.query_one(ErrorMessage)
        assert "backend said 503" in str(error.query_one(".error-text").render())
        assert screen.prompt.text == "please work"  # never lost
        await pilot.click(".retry")
        await wait_idle(pilot, screen)
        assert session.turns.sent == ["please work", "please work"]
        assert screen.prompt.text == ""
        assert screen.query(AssistantMessage).last().entry.text == "second time lucky"


async def test_exception_from_session_is_an_inline_error_not_a_crash() -> None:
    session = FakeSession()
    session.turns.script(Step(raise_exc=RuntimeError("boom")))
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "x")
        await wait_idle(pilot, screen)
        assert "boom" in str(screen.query_one(ErrorMessage).query_one(".error-text").render())
        assert screen.prompt.text == "x"
        assert app.is_running


async def test_tool_calls_show_as_collapsible_blocks() -> None:
    session = FakeSession()
    session.turns.script(Step(text="Saved.", tool=("save_note", {"action": "add"}, "saved note")))
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "remember x")
        await wait_idle(pilot, screen)
        block = screen.query_one(ToolCallBlock)
        assert block.collapsed
        assert block.call.result == "saved note"
        assert "✓ save_note" in str(block.title)


async def test_slash_menu_completes_and_runs() -> None:
    session = FakeSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await pilot.press("slash", "m", "e")
        menu = screen.query_one("#slash-menu")
        assert menu.display
        await pilot.press("tab")
        assert screen.prompt.text == "/memory"
        assert not menu.display
        await pilot.press("enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "MemoryScreen"


async def test_note_feedback_inline_and_unknown_command() -> None:
    session = FakeSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "/note likes tea")
        await wait_idle(pilot, screen)
        await type_and_send(pilot, "/bogus")
        await wait_idle(pilot, screen)
        notices = [str(n.render()) for n in screen.query(NoticeMessage)]
        assert "saved note" in notices[0]
        assert "Unknown command /bogus" in notices[1]
        assert session.memory_commands.notes == ["likes tea"]
        assert session.turns.sent == []


async def test_resume_picker_search_and_open(tmp_path: Path) -> None:
    session = FakeSession()
    session.state.add_conversation("a" * 32, "About lakes", [make_turn(1, "lakes?", "many lakes")])
    session.state.add_conversation(
        "b" * 32,
        "About trees",
        [
            make_turn(1, "trees?", "oaks"),
            make_turn(2, "summary of old turns", "", kind="compaction"),
            make_turn(3, "more trees?", "pines"),
        ],
    )
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await pilot.press("ctrl+o")
        await pilot.pause(0.3)
        picker = app.screen
        assert type(picker).__name__ == "PickerScreen"
        await pilot.press("t", "r", "e", "e")
        await pilot.pause(0.4)
        assert [c.title for c in picker.results] == ["About trees"]  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_idle(pilot, screen)
        assert app.screen is screen
        assert session.conversation is not None and session.conversation.id == "b" * 32
        assert screen.title == "About trees"
        log = screen.query_one(ChatLog)
        kinds = [type(e).__name__ for e in log.entries]
        assert kinds == [
            "UserEntry",
            "AssistantEntry",
            "CompactionEntry",
            "UserEntry",
            "AssistantEntry",
        ]
        assert screen.query_one(".compaction")


@pytest.mark.parametrize("flag", ["resume", "continue"])
async def test_open_directly_with_resume_or_continue(flag: str) -> None:
    session = FakeSession()
    session.state.add_conversation(
        "c" * 32, "Old chat", [make_turn(1, "old question", "old answer")]
    )
    opening = OpenRequest(resume="ccc") if flag == "resume" else OpenRequest(continue_latest=True)
    app = make_app(session, opening=opening)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await wait_idle(pilot, screen)
        assert screen.query_one(AssistantMessage).entry.text == "old answer"
        await pilot.press("up")
        assert screen.prompt.text == "old question"


async def test_resume_unknown_id_notifies_and_starts_fresh() -> None:
    session = FakeSession()
    app = make_app(session, opening=OpenRequest(resume="zzz"))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        assert session.conversation is None
        assert any("zzz" in n.message for n in app._notifications)
        assert screen.title == "new conversation"


async def test_busy_refuses_second_send_and_conversation_switch() -> None:
    session = FakeSession()
    session.turns.script(Step(text="x" * 200, chunk=2, gate=asyncio.Event()))
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "one")
        await pilot.pause(0.05)
        assert screen.busy
        await type_and_send(pilot, "two")
        assert screen.prompt.text == "two"  # kept, not sent
        await pilot.press("ctrl+n")
        await pilot.pause()
        await pilot.press("escape")
        await wait_idle(pilot, screen)
        assert session.turns.sent == ["one"]
        assert session.conversation is not None


async def test_new_conversation_clears_log() -> None:
    session = FakeSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "hello")
        await wait_idle(pilot, screen)
        await pilot.press("ctrl+n")
        await wait_idle(pilot, screen)
        assert screen.query_one(ChatLog).entries == []
        assert session.conversation is None
        assert screen.title == "new conversation"


async def test_sidebar_toggle_and_record_modal() -> None:
    session = FakeSession()
    session.turns.script(Step(text="ok", report=sample_report()))
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        assert not screen.sidebar.display  # narrow: hidden by default
        await pilot.press("ctrl+b")
        assert screen.sidebar.display
        await type_and_send(pilot, "cabin?")
        await wait_idle(pilot, screen)
        screen.sidebar.query_one("#capsules").focus()
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert type(app.screen).__name__ == "RecordScreen"
        await pilot.pause(0.1)
        content = app.screen.query_one("#record-content")
        assert "Full verbatim record t12." in str(content.render())
        await pilot.press("escape")
        assert app.screen is screen


async def test_compact_model_export_help_quit(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    session = FakeSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "hello")
        await wait_idle(pilot, screen)
        await type_and_send(pilot, "/compact the plan")
        await wait_idle(pilot, screen)
        assert screen.query_one(".compaction")
        await type_and_send(pilot, "/model other-model")
        await wait_idle(pilot, screen)
        assert screen.sub_title == "other-model"
        await type_and_send(pilot, "/export")
        await wait_idle(pilot, screen)
        files = list(tmp_path.glob("newt-*.md"))
        assert len(files) == 1 and files[0].read_text() == "exported as md"
        await type_and_send(pilot, "/help")
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        await type_and_send(pilot, "/quit")
        await pilot.pause(0.2)
    assert session.closed


async def test_command_palette_lists_slash_commands() -> None:
    session = FakeSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        for ch in "memory":
            await pilot.press(ch)
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert type(app.screen).__name__ == "MemoryScreen"
        await pilot.press("escape")
        await pilot.press("ctrl+p")
        for ch in "note":
            await pilot.press(ch)
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert app.screen is screen
        assert screen.prompt.text == "/note "


async def test_the_footer_and_memory_show_one_fullness() -> None:
    """The footer kept the fullness of the turn's end while /memory
    showed the figure after a background summary landed (1,449 against
    1,137); now the footer follows the session between turns, both show the
    same figure with the same explanation, and the panel has one word for a
    fold (no "compactions" row beside "folds")."""
    from newt.ui.format import FULLNESS, meter_text
    from newt.ui.screens.memory import MemoryScreen, memory_rows

    session = FakeSession()
    app = make_app(session)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await chat_ready(pilot)
        meter = screen.query_one("#meter", Static)
        assert "1,234/6,553" in str(meter.render())
        assert FULLNESS in str(meter.tooltip)
        session.state.status.used = 987  # a summary landed in the background: no event
        for _ in range(100):
            if "987/6,553" in str(meter.render()):
                break
            await pilot.pause(0.05)
        assert "987/6,553" in str(meter.render())
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert isinstance(app.screen, MemoryScreen)
        rows = dict(memory_rows(app.screen.status))
        assert rows["fullness"].startswith(meter_text(987, 6553)) and FULLNESS in rows["fullness"]
        assert "compactions" not in rows
        assert "last summary" not in rows  # nothing failed
        session.state.status.summary_failure = "ConnectError: the server went away"
        rows = dict(memory_rows(session.state.status))
        assert rows["last summary"].startswith("failed: ConnectError: the server went away")


async def test_a_toast_never_covers_the_message_box() -> None:
    """The first run's toast covered the input box for ~12 s; toasts
    now come in at the top right, and that one is a short line for 6 s."""
    from textual.widgets._toast import Toast

    from newt.ui.app import FIRST_RUN_LOCAL

    session = FakeSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        screen = await chat_ready(pilot)
        app.notify(FIRST_RUN_LOCAL, title="A local model", timeout=6)
        app.notify("and a second one, " * 6, title="More")
        await pilot.pause(0.2)
        toasts = list(screen.query(Toast))
        assert len(toasts) == 2
        box = screen.prompt.region
        for toast in toasts:
            assert not toast.region.overlaps(box), (toast.region, box)
            assert toast.region.y < 30 // 2  # up top, under the header
    assert len(FIRST_RUN_LOCAL) < 80 and "newt --local --list" in FIRST_RUN_LOCAL


async def test_cancelled_send_is_never_blocked(monkeypatch: Any) -> None:
    """A send raised before any event still frees the prompt."""
    session = FakeSession()
    session.turns.script(Step(raise_exc=TimeoutError()))
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "x")
        await wait_idle(pilot, screen)
        assert not screen.busy
        assert screen.query(ErrorMessage)


async def test_long_history_is_windowed_and_scrolling_up_loads_more() -> None:
    from newt.ui.widgets.chat_log import BATCH, INITIAL

    session = FakeSession()
    turns = [make_turn(i, f"question {i}", f"answer {i}") for i in range(1, 1001)]
    session.state.add_conversation("d" * 32, "Long one", turns)
    app = make_app(session, opening=OpenRequest(resume="ddd"))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await chat_ready(pilot)
        await wait_idle(pilot, screen)
        log = screen.query_one(ChatLog)
        assert len(log.entries) == 2000
        mounted = len(log.children) - 1  # minus the "earlier messages" line
        assert mounted == INITIAL
        assert log.first_mounted == 2000 - INITIAL
        log.scroll_home(animate=False, immediate=True)
        await pilot.pause(0.2)
        assert log.first_mounted == 2000 - INITIAL - BATCH
        # Sending while scrolled up does not lose the new messages.
        await type_and_send(pilot, "new question")
        await wait_idle(pilot, screen)
        assert log.entries[-1].text == "ok: new question"  # type: ignore[union-attr]


class CountingSession(FakeSession):
    """A server whose own count is 2.5 times newt's estimate (a paste of a shape
    the estimate has not seen)."""

    async def count_tokens(self, text: str) -> int:
        return self.estimate_tokens(text) * 5 // 2


async def test_a_large_message_is_judged_by_the_servers_count() -> None:
    """A message whose estimate fits but may not (past a quarter of the budget) is
    counted by the server first: refused with the server's figure and a part size
    that fits by it; one that fits by the server's count too goes as usual."""
    session = CountingSession()
    session.turns.script(Step(text="fine"))
    app = make_app(session)
    paste = "All work and no play makes Jack a dull boy. " * 500  # ~5,500 by the estimate
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await chat_ready(pilot)
        screen.prompt.set_text(paste)
        await pilot.press("enter")
        said: list[str] = []
        for _ in range(100):
            await pilot.pause(0.02)
            said = [e.text for e in screen.log_view.entries if isinstance(e, NoticeEntry)]
            if said:
                break
        assert session.turns.sent == [] and screen.prompt.text == paste
        assert "this message alone is about 13,750 tokens" in said[-1]
        advice = said[-1].split("parts of about ")[1]
        part = int(advice.split(" tokens")[0].replace(",", ""))
        chars = int(advice.split(" tokens (")[1].split(" characters")[0].replace(",", ""))
        assert part <= 6553 // 2 and chars * 13_750 <= part * len(paste) * 1.01  # fits
        screen.prompt.set_text("")
        medium = "All work and no play makes Jack a dull boy. " * 150  # ~4,100 by the server
        screen.prompt.set_text(medium)
        await pilot.press("enter")
        await wait_idle(pilot, screen)
        assert session.turns.sent == [medium]


async def test_a_turn_with_no_answer_says_so_and_ctrl_r_asks_again() -> None:
    """The words are stored as said (they stay in memory): the box is not refilled
    with them, which would send them twice; the error says ctrl+r asks again."""
    session = FakeSession()
    session.turns.script(
        Step(error="the model gave no answer (an empty reply)", retryable=False,
             error_kind="NoAnswer"),
        Step(text="Biscuit."),
    )  # fmt: skip
    app = make_app(session)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "What is our dog called?")
        await wait_idle(pilot, screen)
        shown = [e.message for e in screen.log_view.entries if isinstance(e, ErrorEntry)]
        assert shown and shown[-1].endswith("ctrl+r asks again")
        assert screen.prompt.text == ""
