"""`newt memory search|show|forget`: the records memory holds, found, shown whole, forgotten.

Forgetting by keys asks nothing (the keys are the choice); by a phrase it
shows what goes, with a count, and asks; `--all` says what it takes and asks.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from newt.cli.memory.conversations import forgetting
from newt.cli.memory.offline import EXIT_DECLINED, EXIT_OK, ask, bounded, offline_session
from newt.cli.memory.text import clean, cut, records, when
from newt.config import Config
from newt.errors import InputError

if TYPE_CHECKING:
    from newt.agent.own_memory.records import ForgetReport, MemoryHit
    from newt.agent.session.chat_session import ChatSession

TITLE_WIDTH = 28
EXCERPT_WIDTH = 72


async def search(config: Config, query: str, as_json: bool, limit: int | None, out: TextIO) -> int:
    """`newt memory search [QUERY]`: a table (key, kind, date, conversation,
    excerpt), or with --json every hit whole; no query lists the newest."""
    from newt.agent.own_memory.records import SEARCH_LIMIT

    async with offline_session(config) as session:
        hits = await session.memory_records.search(query, limit=limit or SEARCH_LIMIT)
    if as_json:
        out.write(json.dumps([hit_json(h) for h in hits], indent=2) + "\n")
    elif not hits:
        said = f"nothing in memory matches {clean(query)!r}" if query.strip() else "memory is empty"
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
            when(h.said_at),
            cut(clean(h.conversation_title) or "-", TITLE_WIDTH),
            cut(" ".join(clean(h.content).split()), EXCERPT_WIDTH),
        )
        for h in hits
    ]
    header = ("KEY", "KIND", "SAID", "CONVERSATION", "EXCERPT")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    lines = [
        "  ".join(f"{r[i]:<{widths[i]}}" for i in range(4)) + f"  {r[4]}" for r in [header, *rows]
    ]
    return "\n".join(lines) + "\n"


def format_preview(hits: Sequence[MemoryHit], query: str, *, sentences: bool) -> str:
    """What forgetting by a phrase takes: each record whole (escapes stripped),
    under its key, kind, date and conversation, and what of it goes: all of it,
    saying when it holds more than the match, or (`sentences`) what stays."""
    from newt.agent.own_memory.forget_parts import holds_more
    from newt.agent.own_memory.records import sentence_cut

    said = clean(query)
    blocks = []
    for h in hits:
        head = f"{h.key}  {h.kind}  {when(h.said_at)}  {clean(h.conversation_title) or '-'}"
        body = [f"  | {line}" for line in clean(h.content).rstrip().splitlines() or [""]]
        trimmed = sentence_cut(h, query)
        if sentences and trimmed is not None:
            note = [f"  → only what holds {said!r} goes; it keeps:"] + [
                f"  | {line}" for line in clean(trimmed.kept).rstrip().splitlines()
            ]
        elif holds_more(h.content, query):
            note = [f"  → it holds more than {said!r}: all of it goes"]
            if trimmed is not None:
                note[0] += " (--sentences keeps the rest)"
        else:
            note = ["  → all of it goes"]
        blocks.append("\n".join([head, *body, *note]))
    return "\n\n".join(blocks) + "\n"


async def show(config: Config, key: str, out: TextIO) -> int:
    """`newt memory show KEY`: the record whole, under a short header."""
    async with offline_session(config) as session:
        record = await session.fetch_record(_checked_key(key))
        if record is None:
            raise InputError(f"no memory record {key.strip()!r}; `newt memory search` lists them")
        hit = (await session.memory_records.hits([record]))[0]
    where = clean(hit.conversation_title) or "-"
    if hit.conversation_id:
        where += f" ({hit.conversation_id[:12]})"
    out.write(
        f"key:          {hit.key}\nkind:         {hit.kind}\n"
        f"conversation: {where}\nsaid:         {when(hit.said_at)}\n\n"
        f"{clean(hit.content).rstrip()}\n"
    )
    return EXIT_OK


def forget(
    config: Config,
    keys: Sequence[str],
    *,
    matching: str | None,
    everything: bool,
    sentences: bool = False,
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
    if sentences and matching is None:
        raise InputError("--sentences goes with --matching QUERY")
    if keys:
        checked = [_checked_key(k) for k in keys]
        bounded(_all_exist(config, checked))

        async def by_keys(session: ChatSession) -> ForgetReport:
            return await session.forgetting.forget(checked)

        return bounded(forgetting(config, by_keys, out))
    if matching is not None:
        if not matching.strip():
            raise InputError("--matching needs words to look for")
        hits = bounded(_matching(config, matching))
        if not hits:
            out.write(f"no memory record holds {clean(matching)!r}: nothing to forget\n")
            return EXIT_OK
        n = len(hits)
        how = "only the sentences holding it go" if sentences else "they would be forgotten"
        if n == 1:
            how = "only the sentences holding it go" if sentences else "it would be forgotten"
        out.write(f"{records(n)} {'holds' if n == 1 else 'hold'} {clean(matching)!r}; {how}:\n\n")
        out.write(format_preview(hits, matching, sentences=sentences))
        out.flush()
        if not ask(f"Forget {'it' if n == 1 else f'these {n}'}?", yes=yes, stdin=stdin, err=err,
                   needs="forgotten"):  # fmt: skip
            return EXIT_DECLINED

        async def by_phrase(session: ChatSession) -> ForgetReport:
            return await session.forgetting.forget_matching(matching, sentences=sentences)

        return bounded(forgetting(config, by_phrase, out))
    out.write(bounded(_everything_summary(config)) + "\n")
    out.flush()
    if not ask("Forget everything?", yes=yes, stdin=stdin, err=err, needs="forgotten"):
        return EXIT_DECLINED

    async def all_of_it(session: ChatSession) -> ForgetReport:
        return await session.forgetting.forget_everything()

    return bounded(forgetting(config, all_of_it, out))


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
        return await session.memory_records.matching(query)


async def _everything_summary(config: Config) -> str:
    """What `--all` takes, counted, for the question."""
    async with offline_session(config) as session:
        conversations = len(await session.store.conversations.list())
        notes = len(await session.store.notes.list())
        records = await session.store.records.count()
    return (
        f"this forgets every conversation ({conversations}), every note ({notes})"
        f" and every memory record ({records}); the model facts newt measured stay"
    )
