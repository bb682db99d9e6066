"""Driving the app with Textual's Pilot: an app on a FakeSession, waiting for the
chat screen, typing and sending, waiting for a turn, a picker or a notice."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from newt.config import Config
from newt.ui.app import NewtApp
from newt.ui.screens.chat import ChatScreen
from newt.ui.screens.choice_picker import ChoicePickerScreen
from newt.ui.widgets.messages import NoticeMessage
from tests.support.fake_session import FakeSession


def make_app(session: FakeSession, **kwargs: Any) -> NewtApp:
    config = Config()
    config.backend.base_url = session.base_url
    config.backend.model = session.model

    async def open_session(cfg: Config, say: Any) -> Any:
        return session

    return NewtApp(config, open_session=open_session, **kwargs)


async def chat_ready(pilot: Any) -> ChatScreen:
    for _ in range(100):
        if isinstance(pilot.app.screen, ChatScreen):
            await pilot.pause()
            return pilot.app.screen
        await pilot.pause(0.01)
    raise AssertionError(f"chat screen never shown: {pilot.app.screen!r}")


async def type_and_send(pilot: Any, text: str) -> None:
    screen = pilot.app.screen
    screen.prompt.set_text(text)
    await pilot.press("enter")


async def wait_idle(pilot: Any, screen: ChatScreen) -> None:
    for _ in range(200):
        await pilot.pause(0.01)
        if not screen.busy and not any(w.is_running for w in screen.workers):
            await pilot.pause()
            return
    raise AssertionError("turn never finished")


async def until(pilot: Any, check: Callable[[], object], what: str, tries: int = 200) -> None:
    for _ in range(tries):
        if check():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"never: {what}; screen {pilot.app.screen!r}")


async def say(pilot: Any, screen: ChatScreen, text: str) -> None:
    await type_and_send(pilot, text)
    await wait_idle(pilot, screen)


async def picker_ready(pilot: Any) -> ChoicePickerScreen:
    for _ in range(200):
        screen = pilot.app.screen
        if isinstance(screen, ChoicePickerScreen) and (screen.loaded or screen.unavailable):
            await pilot.pause()
            return screen
        await pilot.pause(0.02)
    raise AssertionError(f"the picker never loaded: {pilot.app.screen!r}")


def notices(screen: Any) -> list[str]:
    return [str(m.entry.text) for m in screen.query(NoticeMessage)]


async def wait_for(pilot: Any, screen: Any, text: str) -> None:
    for _ in range(500):
        if any(text in n for n in notices(screen)):
            return
        await pilot.pause(0.02)
    raise AssertionError(f"{text!r} never shown; notices: {notices(screen)}")
