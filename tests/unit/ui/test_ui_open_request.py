"""What the TUI opens at startup (open_request.py): the resumed conversation,
then the preset, then incognito, before the chat screen takes the session; each
failure is a notification and the chat goes on."""

from __future__ import annotations

from typing import Any

from newt.agent.own_memory.records import ForgetReport
from newt.ui.open_request import OpenRequest, incognito_notice, open_requested
from newt.ui.session_api import SessionLike
from tests.support.fake_session import FakeSession
from tests.support.fakes.state import make_turn

Said = list[tuple[str, dict[str, Any]]]


def _notify(said: Said) -> Any:
    def notify(text: str, **kw: Any) -> None:
        said.append((text, kw))

    return notify


def _session() -> FakeSession:
    session = FakeSession()
    session.state.add_conversation(
        "c" * 32, "Old chat", [make_turn(1, "old question", "old answer")]
    )
    return session


async def _open(session: FakeSession, request: OpenRequest) -> Said:
    said: Said = []
    face: SessionLike = session
    await open_requested(face, request, _notify(said))
    return said


async def test_incognito_goes_on_once_the_requested_conversation_is_open() -> None:
    session = _session()
    open_when_asked: list[object] = []
    asked = session.forgetting.set_incognito

    async def set_incognito(on: bool) -> ForgetReport | None:
        open_when_asked.append(session.conversation)
        return await asked(on)

    session.forgetting.set_incognito = set_incognito  # type: ignore[method-assign]
    said = await _open(session, OpenRequest(continue_latest=True, incognito=True))
    assert session.incognito
    assert open_when_asked == [session.conversation] and session.conversation is not None
    assert said == [(incognito_notice(None), {"title": "Incognito", "markup": False})]
    assert said[0][0].startswith("Nothing of this conversation is saved")


async def test_no_incognito_unless_asked() -> None:
    session = _session()
    assert await _open(session, OpenRequest(resume="ccc")) == []
    assert not session.incognito and session.conversation is not None


async def test_incognito_that_fails_says_it_is_off() -> None:
    session = _session()

    async def refuse(on: bool) -> ForgetReport | None:
        raise OSError("disk full")

    session.forgetting.set_incognito = refuse  # type: ignore[method-assign]
    said = await _open(session, OpenRequest(incognito=True))
    assert said == [
        ("OSError: disk full", {"title": "Incognito is off", "severity": "error", "markup": False})
    ]


async def test_a_failed_resume_still_goes_incognito() -> None:
    session = _session()
    said = await _open(session, OpenRequest(resume="zzz", incognito=True))
    assert [kw.get("title") for _, kw in said] == ["Could not resume", "Incognito"]
    assert "zzz" in said[0][0] and session.incognito and session.conversation is None


def test_the_notice_says_what_a_resumed_conversation_lost() -> None:
    report = ForgetReport(conversations=1, messages=1, records=2)
    text = incognito_notice(report)
    assert text.endswith("What was stored of it is deleted: " + report.describe())
