"""`newt rename` and `newt delete`: one conversation, by id or a unique prefix."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TextIO

from newt.cli.memory.offline import EXIT_DECLINED, EXIT_OK, ask, bounded, offline_session
from newt.cli.memory.text import clean, when
from newt.config import Config
from newt.errors import InputError

if TYPE_CHECKING:
    from newt.agent.own_memory.records import ForgetReport
    from newt.agent.session.chat_session import ChatSession
    from newt.store import Conversation


async def rename(config: Config, conv_id: str, title: str, out: TextIO) -> int:
    """`newt rename ID TITLE`: prints the title as stored (one line)."""
    if not title.strip():
        raise InputError("the new title is empty; give one: newt rename ID TITLE")
    async with offline_session(config) as session:
        conv = await session.conversations.rename_conversation(conv_id, title)
    out.write(clean(conv.title) + "\n")
    return EXIT_OK


def delete(
    config: Config, conv_id: str, *, yes: bool, out: TextIO, err: TextIO, stdin: TextIO
) -> int:
    """`newt delete ID`: shows the conversation, asks, deletes, prints what went."""
    conv = bounded(_find(config, conv_id))
    out.write(describe_conversation(conv) + "\n")
    out.flush()
    if not ask("Delete this conversation and all memory holds of it?", yes=yes, stdin=stdin,
               err=err, needs="deleted"):  # fmt: skip
        return EXIT_DECLINED

    async def go(session: ChatSession) -> ForgetReport:
        return (await session.forgetting.delete_conversation(conv.id))[1]

    return bounded(forgetting(config, go, out))


async def _find(config: Config, conv_id: str) -> Conversation:
    from newt.agent.session.chat_session import resolve_conversation

    async with offline_session(config) as session:
        return await resolve_conversation(session.store, conv_id)


def describe_conversation(conv: Conversation) -> str:
    n = conv.message_count  # as the picker and the report count it
    turns = f"{n} message" + ("" if n == 1 else "s")
    flags = " · incognito" if conv.incognito else ""
    return (
        f'"{clean(conv.title) or "(untitled)"}" ({conv.id[:12]}) · {turns}'
        f" · last {when(conv.updated_at)}{flags}"
    )


async def forgetting(
    config: Config, work: Callable[[ChatSession], Awaitable[ForgetReport]], out: TextIO
) -> int:
    async with offline_session(config) as session:
        report = await work(session)
    out.write(clean(report.describe()) + "\n")
    return EXIT_OK
