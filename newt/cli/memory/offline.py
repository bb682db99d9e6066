"""What every memory command shares: a session that sends nothing, one question, one loop a step.

The session opens the configured database with no probe, no embedding
catch-up and no server embedder, so the commands work with no backend
reachable; a question comes between two steps run in loops of their own, so
Ctrl-C at it is plain.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from newt.config import Config
from newt.errors import InputError

if TYPE_CHECKING:
    from newt.agent.session.chat_session import ChatSession

EXIT_OK = 0
EXIT_DECLINED = 1
OFFLINE_BASE_URL = "http://127.0.0.1:9/v1"
"""Stands in when no backend is configured: the discard port, never asked."""
OFFLINE_MODEL = "(none)"
T = TypeVar("T")


def bounded(main: Coroutine[Any, Any, T]) -> T:
    """Run one step in its own loop, ended in bounded time (newt.cli.bounded_exit):
    a question to the user comes between two steps, so Ctrl-C at it is plain."""
    from newt.cli.bounded_exit import run_bounded

    result: list[T] = []

    async def wrapped() -> int:
        result.append(await main)
        return EXIT_OK

    run_bounded(wrapped())
    return result[0]


@asynccontextmanager
async def offline_session(config: Config) -> AsyncIterator[ChatSession]:
    """A session on the configured database that sends nothing: no probe, no
    embedding catch-up, no server embedder, no in-process weights fetched."""
    from newt.agent.session.chat_session import ChatSession
    from newt.cli.bounded_exit import close_within
    from newt.recall.embedder import LocalEmbedder

    backend, recall = config.backend, config.recall
    backend.base_url = backend.base_url or OFFLINE_BASE_URL
    backend.model = backend.model or OFFLINE_MODEL
    if recall.embeddings == "server" or (recall.embeddings != "off" and recall.embeddings_url):
        recall.embeddings = "off"  # embedding the query would be a request: words only
    session = await ChatSession.open(config, probe=False, background_probe=True)
    try:
        embedder = session.recall_parts.embedder
        if isinstance(embedder, LocalEmbedder):
            embedder.fetch = False  # weights not cached: search by words, fetch nothing
        yield session
    finally:
        await close_within(session.close())


def ask(question: str, *, yes: bool, stdin: TextIO, err: TextIO, needs: str) -> bool:
    """True to go on: `--yes`, or "y" to one `[y/N]` question on a terminal.
    Without a terminal and without --yes it raises (exit 2): a script must
    say --yes, never take something away by accident. `needs` ends the error."""
    if yes:
        return True
    if not stdin.isatty():
        raise InputError(f"not asking without a terminal, so nothing was {needs}; pass --yes")
    err.write(f"{question} [y/N] ")
    err.flush()
    answer = stdin.readline()
    if answer.strip().lower() in ("y", "yes"):
        return True
    if not answer.endswith("\n"):
        err.write("\n")
    err.write(f"newt: nothing was {needs}\n")
    err.flush()
    return False
