"""The user's own memory from the command line: `newt rename`,
`newt delete`, and `newt memory search|show|forget`.

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
commands share one way of opening the store and of asking (`offline.py`).
This module holds the parsers and the dispatch; `conversations.py` rename and
delete, `records.py` memory search|show|forget. `newt --incognito` is a choice
the TUI is handed (newt/ui/open_request.py) and print mode's own.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from newt.cli.memory.conversations import delete, rename
from newt.cli.memory.offline import bounded
from newt.cli.memory.records import forget, search, show
from newt.config import Config

__all__ = ["add_parsers", "run_command"]


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
        "--sentences",
        action="store_true",
        help="with --matching: a message that says more keeps the rest; only its"
        " sentences holding the words go",
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
        return bounded(rename(config, args.id, " ".join(args.title), out))
    if args.command == "delete":
        return delete(config, args.id, yes=args.yes, out=out, err=err, stdin=stdin)
    if args.command != "memory":
        return None
    if args.memory_command == "search":
        return bounded(search(config, args.query, args.memory_json, args.limit, out))
    if args.memory_command == "show":
        return bounded(show(config, args.key, out))
    return forget(
        config,
        args.keys,
        matching=args.matching,
        sentences=args.sentences,
        everything=args.everything,
        yes=args.yes,
        out=out,
        err=err,
        stdin=stdin,
    )
