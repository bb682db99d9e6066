"""The user's own memory from the command line (issue 26): `newt rename`,
`newt delete`, `newt memory search|show|forget`, and `newt --incognito`.

Contract: every command opens the database through a `ChatSession` that never
sends a request (no probe, no embedding catch-up; a server embedder is turned
off, so search ranks by words; with no backend configured a placeholder
stands in), so they work with no backend reachable. A command that takes
something away asks once, `[y/N]`, when stdin is a terminal; without one it
needs `--yes` and otherwise stops with exit status 2 before anything goes.
Forgetting named keys asks nothing: the keys are the choice. Exit statuses:
0 done (or nothing to do), 1 the question was answered no, 2 bad input
(unknown or ambiguous id, unknown key, empty title, no terminal without --yes).

Model text (titles, excerpts, records) is stripped of terminal escape
sequences before it is printed; `--json` keeps it whole, JSON-escaped.
Why here and not in cli.py: the parser and `main` stay short, and these
commands share one way of opening the store and of asking.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from newt.config import Config
from newt.errors import InputError
from newt.text import strip_terminal_escapes

if TYPE_CHECKING:
    from newt.agent.memory_admin import ForgetReport, MemoryHit
    from newt.agent.session import ChatSession
    from newt.store import Conversation
    from newt.ui.app import NewtApp
    from newt.ui.session_api import SessionLike

EXIT_OK = 0
EXIT_DECLINED = 1
OFFLINE_BASE_URL = "http://127.0.0.1:9/v1"
"""Stands in when no backend is configured: the discard port, never asked."""
OFFLINE_MODEL = "(none)"
TITLE_WIDTH = 28
EXCERPT_WIDTH = 72
T = TypeVar("T")


def add_parsers(sub: Any) -> None:
    """The subcommands on `newt`'s subparsers (argparse's private action type)."""
    rename = sub.add_parser("rename", help="give a conversation a title of your own")
    rename.add_argument("id", metavar="ID", help="conversation id (unique prefix)")
    rename.add_argument("title", metavar="TITLE", nargs="+", help="the new title")

    delete = sub.add_parser(
        "delete", help="delete a conversation and everything memory holds of it"
    )
    delete.add_argument("id", metavar="ID", help="conversation id (unique prefix)")
    delete.add_argument("--yes", action="store_true", help="do not ask (needed without a terminal)")

    memory = sub.add_parser("memory", help="search, show or forget what newt remembers")
    msub = memory.add_subparsers(dest="memory_command", metavar="ACTION", required=True)
    search = msub.add_parser("search", help="records matching a query, best first")
    search.add_argument(
        "query", metavar="QUERY", nargs="?", default="", help="words to look for (none: newest)"
    )
    search.add_argument(
        "--json", dest="memory_json", action="store_true", help="a JSON list, content whole"
    )
    search.add_argument("--limit", type=_positive, default=None, metavar="N", help="at most N")
    show = msub.add_parser("show", help="one record whole")
    show.add_argument("key", metavar="KEY", help="a record key, as search lists it")
    forget = msub.add_parser("forget", help="forget records: by key, by a phrase, or all")
    forget.add_argument("keys", metavar="KEY", nargs="*", help="record keys, as search lists them")
    forget.add_argument(
        "--matching", metavar="QUERY", help="every record holding these words in a row"
    )
    forget.add_argument(
        "--all", dest="everything", action="store_true", help="every conversation and note"
    )
    forget.add_argument("--yes", action="store_true", help="do not ask (needed without a terminal)")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def run_command(
    args: argparse.Namespace, config: Config, out: TextIO, err: TextIO, stdin: TextIO
) -> int | None:
    """Run `rename`, `delete` or `memory ...`; None when `args` names none of them."""
    if args.command == "rename":
        return _bounded(rename(config, args.id, " ".join(args.title), out))
    if args.command == "delete":
        return delete(config, args.id, yes=args.yes, out=out, err=err, stdin=stdin)
    if args.command != "memory":
        return None
    if args.memory_command == "search":
        return _bounded(search(config, args.query, args.memory_json, args.limit, out))
    if args.memory_command == "show":
        return _bounded(show(config, args.key, out))
    return forget(
        config,
        args.keys,
        matching=args.matching,
        everything=args.everything,
        yes=args.yes,
        out=out,
        err=err,
        stdin=stdin,
    )


def _bounded(main: Coroutine[Any, Any, T]) -> T:
    """Run one step in its own loop, ended in bounded time (newt.agent.bounded_exit):
    a question to the user comes between two steps, so Ctrl-C at it is plain."""
    from newt.agent.bounded_exit import run_bounded

    result: list[T] = []

    async def wrapped() -> int:
        result.append(await main)
        return EXIT_OK

    run_bounded(wrapped())
    return result[0]


# -- the session these commands use ------------------------------------------------


@asynccontextmanager
async def offline_session(config: Config) -> AsyncIterator[ChatSession]:
    """A session on the configured database that sends nothing: no probe, no
    embedding catch-up, no server embedder, no in-process weights fetched."""
    from newt.agent.bounded_exit import close_within
    from newt.agent.session import ChatSession
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


# -- conversations -------------------------------------------------------------


async def rename(config: Config, conv_id: str, title: str, out: TextIO) -> int:
    """`newt rename ID TITLE`: prints the title as stored (one line)."""
    if not title.strip():
        raise InputError("the new title is empty; give one: newt rename ID TITLE")
    async with offline_session(config) as session:
        conv = await session.rename_conversation(conv_id, title)
    out.write(_clean(conv.title) + "\n")
    return EXIT_OK


def delete(
    config: Config, conv_id: str, *, yes: bool, out: TextIO, err: TextIO, stdin: TextIO
) -> int:
    """`newt delete ID`: shows the conversation, asks, deletes, prints what went."""
    conv = _bounded(_find(config, conv_id))
    out.write(describe_conversation(conv) + "\n")
    out.flush()
    if not ask("Delete this conversation and all memory holds of it?", yes=yes, stdin=stdin,
               err=err, needs="deleted"):  # fmt: skip
        return EXIT_DECLINED

    async def go(session: ChatSession) -> ForgetReport:
        return (await session.delete_conversation(conv.id))[1]

    return _bounded(_forgetting(config, go, out))


async def _find(config: Config, conv_id: str) -> Conversation:
    from newt.agent.session import resolve_conversation

    async with offline_session(config) as session:
        return await resolve_conversation(session.store, conv_id)


def describe_conversation(conv: Conversation) -> str:
    turns = f"{conv.turn_count} turn" + ("" if conv.turn_count == 1 else "s")
    flags = " · incognito" if conv.incognito else ""
    return (
        f'"{_clean(conv.title) or "(untitled)"}" ({conv.id[:12]}) · {turns}'
        f" · last {_when(conv.updated_at)}{flags}"
    )


async def _forgetting(
    config: Config, work: Callable[[ChatSession], Awaitable[ForgetReport]], out: TextIO
) -> int:
    async with offline_session(config) as session:
        report = await work(session)
    out.write(_clean(report.describe()) + "\n")
    return EXIT_OK


# -- memory --------------------------------------------------------------------


async def search(config: Config, query: str, as_json: bool, limit: int | None, out: TextIO) -> int:
    """`newt memory search [QUERY]`: a table (key, kind, date, conversation,
    excerpt), or with --json every hit whole; no query lists the newest."""
    from newt.agent.memory_admin import SEARCH_LIMIT

    async with offline_session(config) as session:
        hits = await session.memory_admin.search(query, limit=limit or SEARCH_LIMIT)
    if as_json:
        out.write(json.dumps([hit_json(h) for h in hits], indent=2) + "\n")
    elif not hits:
        said = f"no memory record matches {_clean(query)!r}" if query.strip() else "memory is empty"
        out.write(said + "\n")
    else:
        out.write(format_hits(hits))
    return EXIT_OK


def hit_json(hit: MemoryHit) -> dict[str, Any]:
    """One hit for scripts: ASCII JSON (json.dumps escapes control characters)."""
    return {
        "key": hit.key,
        "kind": hit.kind,
        "content": hit.content,
        "said_at": hit.said_at,
        "conversation_id": hit.conversation_id,
        "conversation_title": hit.conversation_title or None,
        "score": hit.score,
    }


def format_hits(hits: Sequence[MemoryHit]) -> str:
    """Aligned columns, one line a hit, every field stripped of escapes."""
    rows = [
        (
            h.key,
            h.kind,
            _when(h.said_at),
            _cut(_clean(h.conversation_title) or "-", TITLE_WIDTH),
            _cut(" ".join(_clean(h.content).split()), EXCERPT_WIDTH),
        )
        for h in hits
    ]
    header = ("KEY", "KIND", "SAID", "CONVERSATION", "EXCERPT")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    lines = [
        "  ".join(f"{r[i]:<{widths[i]}}" for i in range(4)) + f"  {r[4]}" for r in [header, *rows]
    ]
    return "\n".join(lines) + "\n"


async def show(config: Config, key: str, out: TextIO) -> int:
    """`newt memory show KEY`: the record whole, under a short header."""
    async with offline_session(config) as session:
        record = await session.fetch_record(_checked_key(key))
        if record is None:
            raise InputError(f"no memory record {key.strip()!r}; `newt memory search` lists them")
        hit = (await session.memory_admin.hits([record]))[0]
    where = _clean(hit.conversation_title) or "-"
    if hit.conversation_id:
        where += f" ({hit.conversation_id[:12]})"
    out.write(
        f"key:          {hit.key}\nkind:         {hit.kind}\n"
        f"conversation: {where}\nsaid:         {_when(hit.said_at)}\n\n"
        f"{_clean(hit.content).rstrip()}\n"
    )
    return EXIT_OK


def forget(
    config: Config,
    keys: Sequence[str],
    *,
    matching: str | None,
    everything: bool,
    yes: bool,
    out: TextIO,
    err: TextIO,
    stdin: TextIO,
) -> int:
    """`newt memory forget KEY... | --matching QUERY | --all`: one of the three;
    a phrase shows what goes (with a count) and asks, --all asks, keys do not."""
    chosen = sum((bool(keys), matching is not None, everything))
    if chosen != 1:
        raise InputError("say what to forget: record keys, --matching QUERY or --all (one of them)")
    if keys:
        checked = [_checked_key(k) for k in keys]
        _bounded(_all_exist(config, checked))

        async def by_keys(session: ChatSession) -> ForgetReport:
            return await session.forget(checked)

        return _bounded(_forgetting(config, by_keys, out))
    if matching is not None:
        if not matching.strip():
            raise InputError("--matching needs words to look for")
        hits = _bounded(_matching(config, matching))
        if not hits:
            out.write(f"no memory record holds {_clean(matching)!r}: nothing to forget\n")
            return EXIT_OK
        n = len(hits)
        out.write(f"{_records(n)} hold {_clean(matching)!r} and would be forgotten:\n")
        out.write(format_hits(hits))
        out.flush()
        if not ask(f"Forget {'it' if n == 1 else f'these {n}'}?", yes=yes, stdin=stdin, err=err,
                   needs="forgotten"):  # fmt: skip
            return EXIT_DECLINED

        async def by_phrase(session: ChatSession) -> ForgetReport:
            return await session.forget_matching(matching)

        return _bounded(_forgetting(config, by_phrase, out))
    out.write(_bounded(_everything_summary(config)) + "\n")
    out.flush()
    if not ask("Forget everything?", yes=yes, stdin=stdin, err=err, needs="forgotten"):
        return EXIT_DECLINED

    async def all_of_it(session: ChatSession) -> ForgetReport:
        return await session.forget_everything()

    return _bounded(_forgetting(config, all_of_it, out))


def _checked_key(key: str) -> str:
    from newt.store.forget import parse_key

    try:
        parse_key(key)
    except ValueError:
        raise InputError(
            f"{key.strip()!r} is not a record key (like t12, r12, n3 or c40);"
            " `newt memory search` lists them"
        ) from None
    return key.strip()


async def _all_exist(config: Config, keys: Sequence[str]) -> int:
    """Every key names a record, or nothing is forgotten (exit 2)."""
    async with offline_session(config) as session:
        missing = [k for k in keys if await session.fetch_record(k) is None]
    if missing:
        raise InputError(
            "no memory record " + ", ".join(repr(k) for k in missing)
            + "; nothing was forgotten (`newt memory search` lists them)"
        )  # fmt: skip
    return EXIT_OK


async def _matching(config: Config, query: str) -> list[MemoryHit]:
    async with offline_session(config) as session:
        return await session.memory_matching(query)


async def _everything_summary(config: Config) -> str:
    """What `--all` takes, counted, for the question."""
    async with offline_session(config) as session:
        conversations = len(await session.store.conversations.list())
        notes = len(await session.store.notes.list())
        rows = await session.store.db.conn.execute_fetchall("SELECT count(*) FROM memory_records")
    records = int(next(iter(rows))[0])
    return (
        f"this forgets every conversation ({conversations}), every note ({notes})"
        f" and every memory record ({records}); the model facts newt measured stay"
    )


# -- incognito in the TUI --------------------------------------------------------


def run_tui_incognito(
    config: Config, *, resume: str | None, continue_latest: bool, preset: str | None
) -> int:
    """`newt --incognito` (with -c/-r too): the TUI as `run_tui` runs it, with
    the conversation it opens kept out of memory before the first turn."""
    import asyncio

    app = incognito_app(
        config, resume=resume, continue_latest=continue_latest, preset=preset,
        freeze_startup_heap=True,
    )  # fmt: skip

    async def main() -> None:
        try:
            await app.run_async()
        finally:
            await app.aclose()

    asyncio.run(main())
    return app.return_code or 0


def incognito_app(config: Config, **kw: Any) -> NewtApp:
    """A NewtApp (same arguments) that turns incognito on once the requested
    conversation is open; a resumed one loses what was indexed of it, and a
    notification says so. Why a subclass: the app's startup is the UI's own
    (newt/ui/app.py), and incognito must be on before the first turn is sent."""
    import inspect
    from pathlib import Path

    from newt.ui.app import NewtApp

    class IncognitoApp(NewtApp):
        # Textual reads a relative CSS_PATH beside the class's own module: keep the UI's
        CSS_PATH = str(Path(inspect.getfile(NewtApp)).with_name(str(NewtApp.CSS_PATH)))

        async def _open_requested_conversation(self, session: SessionLike) -> None:
            await super()._open_requested_conversation(session)
            try:
                report = await session.set_incognito(True)
            except Exception as exc:  # the chat goes on; the user must know it is not incognito
                self.notify(str(exc), title="Incognito is off", severity="error", markup=False)
                return
            self.notify(incognito_notice(report), title="Incognito", markup=False)

    return IncognitoApp(config, **kw)


def incognito_notice(report: ForgetReport | None) -> str:
    """What `--incognito` says it did: a resumed conversation's removed records."""
    text = "This conversation is kept out of memory (and so are the ones /new starts)."
    if report is not None:
        text += " What memory held of it is gone: " + _clean(report.describe())
    return text


# -- text --------------------------------------------------------------------------


def _clean(text: str) -> str:
    return strip_terminal_escapes(text)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


def _records(n: int) -> str:
    return f"{n} memory record" + ("" if n == 1 else "s")
