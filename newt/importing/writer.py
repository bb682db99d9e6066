"""Writing imported conversations into newt's store, one transaction each, never twice."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import aiosqlite

from newt.importing.model import ImportedConversation, ImportedFork, ImportedTurn, Item, Refused
from newt.store import Store, make_title
from newt.store.records import insert_record
from newt.store.turn_edits import fork_title

Progress = Callable[[int, int], None]
"""Called after each conversation with (conversations done, turns written so far)."""

_INDEXED = ("complete", "interrupted")  # what TurnRepo.complete indexes; pending/failed never


@dataclass
class ImportSummary:
    imported: list[str] = field(default_factory=list)
    """newt ids of the conversations written (or that would be, in a dry run)."""
    turns: int = 0
    forks: int = 0
    """Other branches written as forks of the imported conversations (ChatGPT's)."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """Source ids already imported (or, for newt's own export, already in this store)."""
    refused: list[tuple[str, str]] = field(default_factory=list)
    """(source id, why) of conversations that could not be read or written."""

    def lines(self, *, dry_run: bool = False) -> list[str]:
        verb = "would import" if dry_run else "imported"
        forks = f" and {self.forks} other branch(es) as forks" if self.forks else ""
        out = [
            f"{verb} {len(self.imported)} conversation(s){forks}, {self.turns} turn(s);"
            f" skipped {len(self.skipped)} already there; refused {len(self.refused)}"
        ]
        out += [f"  refused {ident}: {why}" for ident, why in self.refused]
        return out

    def report(self, source: str, *, dry_run: bool = False) -> list[str]:
        """What `newt import` prints and the TUI's import shows: the same lines."""
        first, *rest = self.lines(dry_run=dry_run)
        return [f"newt import ({source}): {first}", *rest]


def _user_text(user: str, attachments: tuple[str, ...]) -> str:
    return "\n\n".join(p for p in (user, "\n".join(attachments)) if p)


async def _already(store: Store, conv: ImportedConversation) -> str | None:
    """Why `conv` is not imported again, or None."""
    cur = await store.db.conn.execute(
        "SELECT digest FROM imports WHERE source = ? AND source_id = ?",
        (conv.source, conv.source_id),
    )
    row = await cur.fetchone()
    await cur.close()
    if row is not None:
        if row[0] == conv.digest():
            return "already imported"
        return "already imported, changed since (delete it in newt to import it again)"
    if conv.source == "newt" and await store.conversations.get(conv.source_id) is not None:
        return "already in this store"
    return None


async def _insert_turn(
    conn: aiosqlite.Connection,
    conv_id: str,
    turn: ImportedTurn,
    now: float,
    copied_from: int | None = None,
) -> int:
    """One turn row; its recall records (dated when the words were said) unless it is
    a fork's copy, which shares the original's, as a fork made in newt does."""
    user = _user_text(turn.user, turn.attachments)
    cur = await conn.execute(
        "INSERT INTO turns(conversation_id, kind, status, user, assistant, thinking,"
        " attachments, created_at, copied_from) VALUES (?, 'turn', ?, ?, ?, ?, '[]', ?, ?)",
        (
            conv_id,
            turn.status,
            user,
            turn.assistant,
            turn.thinking or "",
            turn.said_at,
            copied_from,
        ),
    )
    turn_id = cur.lastrowid
    await cur.close()
    assert turn_id is not None
    if copied_from is not None or turn.status not in _INDEXED:
        return turn_id
    # the records TurnRepo.complete makes
    for role, key, text in (("user", "t", user), ("assistant", "r", turn.assistant)):
        if text.strip():
            await insert_record(
                conn,
                key=f"{key}{turn_id}",
                source="turn",
                content=text,
                conversation_id=conv_id,
                turn_id=turn_id,
                created_at=now,
                role=role,  # type: ignore[arg-type]
                said_at=turn.said_at,
            )
    return turn_id


async def _write_fork(
    conn: aiosqlite.Connection,
    conv: ImportedConversation,
    fork: ImportedFork,
    parent: tuple[str, str, list[int]],
    now: float,
) -> None:
    """Another branch as a newt fork of the conversation (parent id, title, turn ids):
    copies of the turns it shares, then its own."""
    parent_id, title, turn_ids = parent
    fork_id = uuid.uuid4().hex
    await conn.execute(
        "INSERT INTO conversations(id, title, model, base_url, created_at, updated_at,"
        " parent_id, forked_at) VALUES (?, ?, ?, '', ?, ?, ?, ?)",
        (
            fork_id,
            fork_title(title),
            conv.model,
            fork.turns[0].said_at,
            max(t.said_at for t in fork.turns),
            parent_id,
            turn_ids[fork.shared - 1] if fork.shared else None,
        ),
    )
    for turn, original in zip(conv.turns[: fork.shared], turn_ids[: fork.shared], strict=True):
        await _insert_turn(conn, fork_id, turn, now, copied_from=original)
    for turn in fork.turns:
        await _insert_turn(conn, fork_id, turn, now)


async def write_conversation(store: Store, conv: ImportedConversation) -> str:
    """Insert `conv` (and its other branches, as forks) with its own times and index its
    turns (said_at = when each was said), all in one transaction: a failure leaves
    nothing of it. Returns the new conversation id."""
    db = store.db
    free = conv.source == "newt" and await store.conversations.get(conv.source_id) is None
    conv_id = conv.source_id if free else uuid.uuid4().hex
    first_user = next((t.user for t in conv.turns if t.user.strip()), "")
    title = " ".join(conv.title.split()) or make_title(first_user)
    last = max((t.said_at for t in conv.turns), default=conv.created_at)
    updated = max(conv.updated_at or last, last)
    now = db.clock()
    async with db.transaction() as conn:
        await conn.execute(
            "INSERT INTO conversations(id, title, model, base_url, created_at, updated_at)"
            " VALUES (?, ?, ?, '', ?, ?)",
            (conv_id, title, conv.model, conv.created_at, updated),
        )
        turn_ids = [await _insert_turn(conn, conv_id, turn, now) for turn in conv.turns]
        for fork in conv.forks:
            await _write_fork(conn, conv, fork, (conv_id, title, turn_ids), now)
        await conn.execute(
            "INSERT INTO imports(source, source_id, conversation_id, digest, imported_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (conv.source, conv.source_id, conv_id, conv.digest(), now),
        )
    return conv_id


def _count(summary: ImportSummary, conv: ImportedConversation) -> None:
    summary.turns += len(conv.turns) + sum(len(f.turns) for f in conv.forks)
    summary.forks += len(conv.forks)


async def import_conversations(
    store: Store,
    items: Iterable[Item],
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> ImportSummary:
    """Import each conversation of `items` on its own: one refused (unreadable, empty, or
    failing to write) is listed with why and the others still go in. A whole-file
    ImportFormatError raised by `items` propagates."""
    summary = ImportSummary()
    for done, item in enumerate(items, 1):
        if isinstance(item, Refused):
            summary.refused.append((item.source_id, item.reason))
        elif not item.turns:
            summary.refused.append((item.source_id, "no messages in it"))
        elif (why := await _already(store, item)) is not None:
            summary.skipped.append((item.source_id, why))
        elif dry_run:
            summary.imported.append(item.source_id)
            _count(summary, item)
        else:
            try:
                summary.imported.append(await write_conversation(store, item))
                _count(summary, item)
            except Exception as exc:
                summary.refused.append((item.source_id, f"not written: {exc}"))
        if progress is not None:
            progress(done, summary.turns)
    return summary
