"""ChatSession is composed, not mixed in.

The session owns its parts (newt/agent/session/chat_session.py's docstring lists them) and
hands each what it needs; no part reaches into another's private members, and
nothing in the agent layer probes at run time whether an object can do
something: a provider declares what it can do (newt/memory/provider.py),
and the rest are typed parameters.
"""

from __future__ import annotations

import ast

import pytest

from newt.agent.session.chat_session import ChatSession
from tests.support.fake_openai import FakeOpenAI
from tests.support.paths import REPO, TESTS
from tests.support.probes import probes
from tests.support.session_helpers import make_config

AGENT = REPO / "newt" / "agent"
# the session's room and the user's memory as it serves it: every part, whatever joins
PARTS = sorted(
    path.relative_to(AGENT).as_posix()
    for room in ("session", "own_memory")
    for path in (AGENT / room).glob("*.py")
)
OWN = {"self", "cls"}
# open() is ChatSession's own classmethod, setting up the instance it built
ALLOWED = {"session/chat_session.py: session._owns_store"}
CHATGPT = TESTS / "fixtures" / "import" / "chatgpt_conversations.json"


def private_reaches(source: str, where: str) -> list[str]:
    """`other._name` for any `other` but self and cls (dunders are not private)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in OWN)
        ):
            found.append(f"{where}: {ast.unparse(node)}")
    return found


def test_the_session_has_no_mixins() -> None:
    assert ChatSession.__mro__ == (ChatSession, object)


def test_no_part_reaches_into_another() -> None:
    found = [
        reach
        for name in PARTS
        for reach in private_reaches((AGENT / name).read_text(encoding="utf-8"), name)
        if reach not in ALLOWED
    ]
    assert not found, "hand the part what it needs instead:\n" + "\n".join(found)


def test_the_check_sees_a_reach_and_lets_own_members_pass() -> None:
    source = "self._a = 1\nx = session._writer()\ny = other.__class__\n"
    assert private_reaches(source, "sample.py") == ["sample.py: session._writer"]


def test_the_agent_has_no_capability_probes() -> None:
    found = [
        probe
        for path in sorted(AGENT.rglob("*.py"))
        for probe in probes(path.read_text(encoding="utf-8"), path.relative_to(REPO).as_posix())
    ]
    assert not found, "declare it (a Protocol, a flag, a typed parameter):\n" + "\n".join(found)


async def test_an_import_writes_to_the_session_store_and_queues_the_embedding(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = await ChatSession.open(make_config(fake_openai.base_url))
    try:
        queued: list[bool] = []
        monkeypatch.setattr(session.recall_parts, "stored", lambda: queued.append(True))
        report = await session.import_history(CHATGPT)
        assert report.summary.imported
        assert queued == [True]
        listed = {c.id for c in await session.conversations.list_conversations()}
        assert set(report.summary.imported) <= listed
    finally:
        await session.close()


def test_the_session_is_its_parts_not_their_forwarders() -> None:
    # callers use session.turns, session.conversations, ...; the session keeps what no part owns
    public = [name for name in vars(ChatSession) if not name.startswith("_")]
    assert len(public) <= 25, public
    assert "send" not in public and "forget" not in public
