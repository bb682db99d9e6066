"""A slash command's error (chat_commands.py): one of newt's errors for the user
reads inline beside the command and ends there; anything else (a bug) reads
inline too and is raised on, so the worker reports it. The type decides, not
the module that defined it."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, cast

import pytest

from newt.agent.errors import ConversationNotFound
from newt.errors import NewtError
from newt.ui.command_host import CommandHost
from newt.ui.screens.chat_commands import ChatCommands


class Host:
    """Just what `spawn` reaches: the worker it starts and the inline feedback."""

    def __init__(self) -> None:
        self.said: list[tuple[str, str]] = []
        self.work: list[Awaitable[None]] = []

    def feedback(self, text: str, level: str = "feedback") -> None:
        self.said.append((text, level))

    def run_worker(self, work: Awaitable[None], **_: Any) -> None:
        self.work.append(work)


class Refused(NewtError):
    """One of newt's errors defined outside newt's modules: still ours by type."""


async def _spawned(host: Host, exc: BaseException) -> None:
    async def command() -> None:
        raise exc

    ChatCommands(cast(CommandHost, host)).spawn(command())
    (work,) = host.work
    await work


@pytest.mark.parametrize(
    ("exc", "said"),
    [
        (ConversationNotFound("no conversation with id 'zz'"), "no conversation with id 'zz'"),
        (Refused("not now"), "not now"),
    ],
)
async def test_a_user_error_reads_inline_and_ends_there(exc: NewtError, said: str) -> None:
    host = Host()
    await _spawned(host, exc)  # nothing raised
    assert len(host.said) == 1
    text, level = host.said[0]
    assert text.startswith(said) and level == "warning"


@pytest.mark.parametrize("exc", [RuntimeError("boom"), KeyError("missing")])
async def test_a_foreign_error_reads_inline_and_is_raised_on(exc: Exception) -> None:
    host = Host()
    with pytest.raises(type(exc)):
        await _spawned(host, exc)
    assert host.said == [(f"{type(exc).__name__}: {exc}", "warning")]


class Glitch(ValueError):
    """An error from inside newt that is not one of its errors for the user."""

    __module__ = "newt.recall.engine"  # where such a bug would come from


async def test_a_bug_in_a_newt_module_is_still_raised() -> None:
    host = Host()
    with pytest.raises(Glitch):
        await _spawned(host, Glitch("a row went missing"))
