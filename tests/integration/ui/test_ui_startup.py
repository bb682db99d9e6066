"""Startup. The chat screen is drawn before the session opens and
takes typing; what is sent meanwhile waits for the session. The prompt is
usable before the capability probe answers, and the real newt freezes its
startup heap out of garbage collection.

The fake server holds `/props` (llama-server's context size) until the test
lets it go; the TUI must show the chat screen and take typing meanwhile, and a
message sent meanwhile waits for the probe inside the session.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from pathlib import Path
from typing import Any

import pytest

from newt.agent.session.chat_session import ChatSession
from newt.config import Config
from newt.ui.app import NewtApp
from newt.ui.open_request import OpenRequest
from newt.ui.widgets.messages import AssistantMessage, UserMessage
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.fake_session import FakeSession
from tests.support.fakes.state import make_turn
from tests.support.fakes.turns import Step
from tests.support.homes import config_for
from tests.support.local_machine import no_local_server
from tests.support.pilot import chat_ready, type_and_send, wait_idle
from tests.support.session_helpers import make_config, run_turn


async def wait_until(condition: object, what: str, timeout: float = 5.0) -> None:
    for _ in range(int(timeout / 0.01)):
        if callable(condition) and condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


def probe_asked(fake: FakeOpenAI) -> bool:
    return any(r.path == "/props" for r in fake.requests)


@pytest.mark.usefixtures("home")
async def test_chat_screen_and_typing_before_the_probe_answers(fake_openai: FakeOpenAI) -> None:
    gate = threading.Event()
    fake_openai.props_gate = gate
    fake_openai.n_ctx = 3000
    fake_openai.script(Reply(text="answered after the probe"))
    app = NewtApp(config_for(fake_openai), discover=no_local_server)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await chat_ready(pilot)
            await wait_until(lambda: probe_asked(fake_openai), "the probe started")
            assert not gate.is_set()  # the chat screen is up while /props is held
            await pilot.press("h", "i")
            assert screen.prompt.text == "hi"
            await type_and_send(pilot, "hello")
            await pilot.pause(0.3)
            # The turn waits for the probe in the session; the prompt stays usable.
            assert fake_openai.chat_requests == []
            await pilot.press("o", "k")
            assert screen.prompt.text == "ok"
            gate.set()
            await wait_idle(pilot, screen)
            replies = [m.entry.text for m in screen.query(AssistantMessage)]
            assert replies == ["answered after the probe"]
            assert app.session is not None
            assert app.session.memory_status().context_tokens == 3000
    finally:
        gate.set()


async def test_a_probe_that_changes_the_budget_keeps_the_resumed_conversation(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    config = make_config(fake_openai.base_url, "[recall]\nretained_token_budget = 0\n")
    async with await ChatSession.open(config) as first:
        for i in range(2):
            fake_openai.script(Reply(text=f"answer {i}"))
            await run_turn(first, f"question {i}")
        assert first.budget.context_tokens == 4096
    fake_openai.n_ctx = 2048  # the server restarted with a smaller context
    gate = threading.Event()
    fake_openai.props_gate = gate
    try:
        session = await ChatSession.open(config, background_probe=True)
        async with session:
            assert session.budget.context_tokens == 4096  # the cache, at once
            assert await session.conversations.continue_latest() is not None
            assert session.memory_status().resident_turns == 2
            gate.set()
            await session.probed()
            status = session.memory_status()
            assert (status.context_tokens, status.budget_source) == (2048, "backend")
            assert status.resident_turns == 2  # restored into the new provider
            fake_openai.script(Reply(text="answer 2"))
            await run_turn(session, "question 2")
            assert session.memory_status().resident_turns == 3
    finally:
        gate.set()


@pytest.mark.usefixtures("home")
async def test_the_real_newt_freezes_its_startup_heap(fake_openai: FakeOpenAI) -> None:
    assert gc.get_freeze_count() == 0
    try:
        app = NewtApp(config_for(fake_openai), discover=no_local_server, freeze_startup_heap=True)
        async with app.run_test(size=(120, 36)) as pilot:
            await chat_ready(pilot)
            await wait_until(lambda: gc.get_freeze_count() > 0, "the heap frozen", timeout=10)
    finally:
        gc.unfreeze()


@pytest.mark.usefixtures("home")
async def test_apps_in_tests_leave_the_heap_alone(fake_openai: FakeOpenAI) -> None:
    """Only `run_tui` freezes: a process running many apps must keep collecting."""
    app = NewtApp(config_for(fake_openai), discover=no_local_server)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await chat_ready(pilot)
        await pilot.pause(1.5)  # past the Markdown warm-up, when the real newt freezes
        assert screen.log_view is not None
    assert gc.get_freeze_count() == 0


def gated_app(session: FakeSession, gate: asyncio.Event, **kwargs: Any) -> NewtApp:
    """An app whose session opens only when `gate` is set (a slow cold start)."""
    config = Config()
    config.backend.base_url = session.base_url
    config.backend.model = session.model

    async def open_session(cfg: Config, say: Any) -> Any:
        await gate.wait()
        return session

    return NewtApp(config, open_session=open_session, **kwargs)


async def test_a_prompt_sent_before_the_session_opens_is_sent_once_it_is() -> None:
    session = FakeSession()
    session.turns.script(Step(text="the answer"))
    gate = asyncio.Event()
    app = gated_app(session, gate)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await chat_ready(pilot)  # drawn while the session is still opening
        assert not screen.ready and app.session is None
        await pilot.press("h", "i")
        assert screen.prompt.text == "hi"
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert session.turns.sent == []  # held, not lost
        assert screen.busy  # a second Enter is refused meanwhile, not queued twice
        await pilot.press("o", "k")
        assert screen.prompt.text == "ok"  # typing goes on
        gate.set()
        await wait_idle(pilot, screen)
        assert screen.ready and app.session is session
        assert session.turns.sent == ["hi"]
        assert [m.entry.text for m in screen.query(AssistantMessage)] == ["the answer"]
        assert screen.prompt.text == "ok"


async def test_a_command_and_a_resumed_history_wait_for_the_session() -> None:
    session = FakeSession()
    session.state.add_conversation("a" * 32, "old talk", [make_turn(1, "earlier question", "old")])
    session.turns.script(Step(text="new answer"))
    gate = asyncio.Event()
    app = gated_app(session, gate, opening=OpenRequest(resume="aaa"))
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "/note remember the gate")
        await pilot.pause(0.1)
        assert session.memory_commands.notes == []
        await type_and_send(pilot, "next question")
        gate.set()
        await wait_idle(pilot, screen)
        assert session.memory_commands.notes == ["remember the gate"]
        assert session.turns.sent == ["next question"]
        users = [m.entry.text for m in screen.query(UserMessage)]
        assert users == ["earlier question", "next question"]  # the history stays above
        assert screen.title == "old talk"
