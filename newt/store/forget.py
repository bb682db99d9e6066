"""Forgetting for real: records, messages, notes and whole conversations leave
the index, the vectors and the bytes of the database file.

Every connection runs with `PRAGMA secure_delete = ON` (newt.store.db), so
what a statement deletes or overwrites is zeroed in the file. What is left is
done by `scrub` after each forget: the FTS5 index is merged (`optimize`), so no
older segment still lists the words, and the WAL is checkpointed and truncated,
so no older copy of a page survives in `newt.db-wal`. Why: "what the user
deletes is gone" means gone from every byte, not only from the screen.

A turn's message that is forgotten stays in its conversation's log as
`FORGOTTEN` (the log keeps its shape, so the working set restores the same
way), in the turn and in every fork's copy of it. Deleting a conversation
first hands the recall records a fork shares with it to that fork's copies,
so the fork keeps its memory. Rewriting the compaction summaries that quote a
forgotten message is the agent's part (newt.agent.memory_admin): the record's
text is the memory layer's.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiosqlite

from newt.store.conversations import make_title
from newt.store.db import Database
from newt.store.errors import StoreError
from newt.store.models import MemoryRecord
from newt.store.records import row_to_record

FORGOTTEN = "[forgotten]"
"""What a forgotten message reads as in the log, the screen and the request."""
FORGOTTEN_TITLE = "(forgotten)"
CHECKPOINT_TRIES = 25
"""Tries (0.1 s apart) to truncate the WAL while another newt reads the database."""

_KEY = re.compile(r"^([trcn])(\d+)(?:\.(\d+))?$")


@dataclass
class Forgotten:
    """What one forget took away: counts for the user, and the old words of
    the messages (in memory only) so quoting summaries can be found."""

    records: int = 0
    messages: int = 0
    notes: int = 0
    conversations: int = 0
    old_texts: list[str] = field(default_factory=list)
    old_notes: list[str] = field(default_factory=list)
    """The words of forgotten notes: the caller takes them out where they were quoted."""
    touched: set[str] = field(default_factory=set)
    """Conversations whose log changed (to reload if open, to check for quotes)."""
    scrubbed: bool = True
    """False when another process kept the WAL from being truncated."""

    def add(self, other: Forgotten) -> None:
        self.records += other.records
        self.messages += other.messages
        self.notes += other.notes
        self.conversations += other.conversations
        self.old_texts += other.old_texts
        self.old_notes += other.old_notes
        self.touched |= other.touched
        self.scrubbed = self.scrubbed and other.scrubbed


class NotARecordKey(StoreError, ValueError):
    """A key to forget that names no record kind newt has (exit 2)."""


def parse_key(key: str) -> tuple[str, int, int | None]:
    """(kind letter, id, tool result number) of a retrieval key; NotARecordKey otherwise."""
    found = _KEY.match(key.strip())
    if found is None:
        raise NotARecordKey(
            f"{key.strip()!r} is not a record key (like t12, r12, n3 or c40);"
            " a memory search lists them"
        )
    n = found.group(3)
    return found.group(1), int(found.group(2)), int(n) if n is not None else None


def _phrase(query: str) -> str:
    """The query as one FTS5 phrase: its words in order, quotes doubled."""
    words = re.findall(r"\w+", query)
    return '"' + " ".join(words) + '"' if words else ""


def _scrub_strings(value: Any, text: str) -> Any:
    """`value` (decoded JSON) with every string holding `text` replaced."""
    if isinstance(value, str):
        return FORGOTTEN if text and text in value else value
    if isinstance(value, list):
        return [_scrub_strings(v, text) for v in value]
    if isinstance(value, dict):
        return {k: _scrub_strings(v, text) for k, v in value.items()}
    return value


class MemoryEraser:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- what would go -------------------------------------------------------------

    async def matching(self, query: str, limit: int = 1000) -> list[MemoryRecord]:
        """Records holding the query's words as a phrase (stemmed, as the index
        reads them), newest first: what "forget every record matching" takes."""
        phrase = _phrase(query)
        if not phrase:
            return []
        rows = await _all(
            self.db.conn,
            "SELECT r.* FROM memory_fts f JOIN memory_records r ON r.id = f.rowid"
            " WHERE memory_fts MATCH ? ORDER BY r.said_at DESC, r.id DESC LIMIT ?",
            (phrase, limit),
        )
        return [row_to_record(row) for row in rows]

    async def compaction_rows(self, conversations: Collection[str]) -> list[tuple[int, str, str]]:
        """(row id, conversation id, record text) of every compaction row of
        these conversations, oldest first."""
        if not conversations:
            return []
        rows = await _all(
            self.db.conn,
            "SELECT id, conversation_id, user FROM turns WHERE kind = 'compaction'"
            " AND conversation_id IN (SELECT value FROM json_each(?)) ORDER BY id",
            (json.dumps(sorted(conversations)),),
        )
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    # -- forgetting ------------------------------------------------------------

    async def forget_keys(self, keys: Iterable[str]) -> Forgotten:
        """Forget these records in one transaction: a note is removed; a user
        message or reply becomes FORGOTTEN in its turn and every copy (a reply
        takes its reasoning and tool events with it); a tool result leaves the
        turn's tool events; a summary record leaves the index (its row is
        rewritten by the caller). Unknown keys are skipped."""
        done = Forgotten()
        async with self.db.transaction() as conn:
            for key in keys:
                kind, ident, n = parse_key(key)
                if kind == "n":
                    cur = await conn.execute(
                        "DELETE FROM notes WHERE id = ? RETURNING content", (ident,)
                    )
                    found = list(await cur.fetchall())
                    await cur.close()
                    done.notes += len(found)
                    done.records += len(found)
                    done.old_notes += [str(r[0]) for r in found]
                    continue
                await self._forget_turn_record(conn, key, kind, ident, n, done)
        done.scrubbed = await self.scrub()
        return done

    async def _forget_turn_record(
        self,
        conn: aiosqlite.Connection,
        key: str,
        kind: str,
        root: int,
        n: int | None,
        done: Forgotten,
    ) -> None:
        cur = await conn.execute(
            "DELETE FROM memory_records WHERE key = ? RETURNING content", (key,)
        )
        removed = list(await cur.fetchall())
        await cur.close()
        done.records += len(removed)
        rows = await _all(
            conn,
            "SELECT id, conversation_id, user, assistant, tool_events FROM turns"
            " WHERE id = ? OR copied_from = ?",
            (root, root),
        )
        if not rows:
            return
        done.touched |= {str(r[1]) for r in rows}
        original = next((r for r in rows if r[0] == root), rows[0])
        if kind == "c":
            return  # a summary's text is the caller's to rewrite (the memory layer's)
        if n is not None:  # a tool result: its text leaves every copy's tool events
            text = str(removed[0][0]).partition("\nResult: ")[2] if removed else ""
            for row in rows:
                events = _scrub_strings(json.loads(row[4] or "[]"), text)
                await conn.execute(
                    "UPDATE turns SET tool_events = ? WHERE id = ?", (json.dumps(events), row[0])
                )
            done.old_texts += [text] if text else []
            return
        if kind == "t":
            old = str(original[2])
            await conn.execute(
                "UPDATE turns SET user = ?, attachments = '[]' WHERE id = ? OR copied_from = ?",
                (FORGOTTEN, root, root),
            )
            await self._untitle(conn, {str(r[1]) for r in rows}, old)
        else:
            old = str(original[3])
            await conn.execute(
                "UPDATE turns SET assistant = ?, thinking = '', tool_events = '[]'"
                " WHERE id = ? OR copied_from = ?",
                (FORGOTTEN, root, root),
            )
            cur = await conn.execute(
                "DELETE FROM memory_records WHERE key LIKE ? RETURNING id", (f"t{root}.%",)
            )
            done.records += len(list(await cur.fetchall()))
            await cur.close()
        if old and old != FORGOTTEN:
            done.messages += 1
            done.old_texts.append(old)

    async def _untitle(self, conn: aiosqlite.Connection, conversations: set[str], old: str) -> None:
        """A title made from a forgotten message goes with it."""
        made = make_title(old).rstrip("…")
        if not made:
            return
        rows = await _all(
            conn,
            "SELECT id, title FROM conversations WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(conversations)),),
        )
        for conv_id, title in rows:
            if str(title).startswith(made):
                await conn.execute(
                    "UPDATE conversations SET title = ? WHERE id = ?", (FORGOTTEN_TITLE, conv_id)
                )

    async def rewrite_compaction(self, row_id: int, record: str, summary: str | None) -> None:
        """Replace a compaction row's text (and its forks' copies): with
        `summary` its recall record is re-indexed from it, without it the
        record leaves the index."""
        async with self.db.transaction() as conn:
            await conn.execute(
                "UPDATE turns SET user = ? WHERE id = ? OR copied_from = ?",
                (record, row_id, row_id),
            )
            cur = await conn.execute(
                "SELECT coalesce(copied_from, id) FROM turns WHERE id = ?", (row_id,)
            )
            root = await cur.fetchone()
            await cur.close()
            key = f"c{root[0] if root else row_id}"
            if summary is None:
                await conn.execute("DELETE FROM memory_records WHERE key = ?", (key,))
            else:
                await conn.execute(
                    "UPDATE memory_records SET content = ? WHERE key = ?", (summary, key)
                )

    async def replace_text(self, old: str, new: str) -> Forgotten:
        """Every verbatim occurrence of `old` (case and spacing aside) in the
        log, the records and the summaries becomes `new`: a corrected note's
        old words never come back from any path."""
        pattern = re.compile(r"\s+".join(map(re.escape, old.split())), re.IGNORECASE)
        done = Forgotten()
        first = old.split()[0].lower() if old.split() else ""
        if not first:
            return done
        like = f"%{first}%"
        async with self.db.transaction() as conn:
            rows = await _all(
                conn,
                "SELECT id, conversation_id, user, assistant, thinking, tool_events FROM turns"
                " WHERE lower(user) LIKE ? OR lower(assistant) LIKE ? OR lower(thinking) LIKE ?"
                " OR lower(tool_events) LIKE ?",
                (like, like, like, like),
            )
            for row in rows:
                texts = [str(row[i]) for i in (2, 3, 4)]
                changed = [pattern.sub(new, t) for t in texts]
                events = str(row[5])
                new_events = json.dumps(_replace_strings(json.loads(events or "[]"), pattern, new))
                if changed != texts or new_events != events:
                    await conn.execute(
                        "UPDATE turns SET user = ?, assistant = ?, thinking = ?, tool_events = ?"
                        " WHERE id = ?",
                        (*changed, new_events, row[0]),
                    )
                    done.messages += 1
                    done.touched.add(str(row[1]))
            titles = await _all(
                conn, "SELECT id, title FROM conversations WHERE lower(title) LIKE ?", (like,)
            )
            for conv_id, title in titles:
                if pattern.sub(new, str(title)) != title:
                    await conn.execute(
                        "UPDATE conversations SET title = ? WHERE id = ?",
                        (pattern.sub(new, str(title)), conv_id),
                    )
            records = await _all(
                conn,
                "SELECT id, content FROM memory_records WHERE source != 'note'"
                " AND lower(content) LIKE ?",
                (like,),
            )
            for rid, content in records:
                changed_content = pattern.sub(new, str(content))
                if changed_content != content:
                    await conn.execute(
                        "UPDATE memory_records SET content = ? WHERE id = ?",
                        (changed_content, rid),
                    )
                    done.records += 1
        done.scrubbed = await self.scrub()
        return done

    async def delete_conversation(self, conv_id: str) -> Forgotten:
        """Delete a conversation with its turns, records, vectors, settings,
        compaction records and the notes made in it; a fork of it keeps its
        own copies and the recall records they share."""
        done = Forgotten()
        async with self.db.transaction() as conn:
            await self._hand_to_forks(conn, conv_id)
            counted = await _all(
                conn,
                "SELECT (SELECT count(*) FROM memory_records WHERE conversation_id = ?),"
                " (SELECT count(*) FROM notes WHERE conversation_id = ?),"
                " (SELECT count(*) FROM turns WHERE conversation_id = ? AND kind = 'turn')",
                (conv_id, conv_id, conv_id),
            )
            records, notes, turns = counted[0]
            await conn.execute(
                "UPDATE conversations SET parent_id = NULL WHERE parent_id = ?", (conv_id,)
            )
            cur = await conn.execute(
                "DELETE FROM conversations WHERE id = ? RETURNING id", (conv_id,)
            )
            deleted = list(await cur.fetchall())
            await cur.close()
        if not deleted:
            raise KeyError(conv_id)
        done.records, done.notes, done.messages = int(records), int(notes), int(turns)
        done.conversations = 1
        done.scrubbed = await self.scrub()
        return done

    async def drop_index(self, conv_id: str) -> Forgotten:
        """Take a conversation's words out of memory, keeping its log (it was
        just made incognito): its records and their vectors go, a fork keeps
        the ones it shares."""
        done = Forgotten()
        async with self.db.transaction() as conn:
            await self._hand_to_forks(conn, conv_id)
            cur = await conn.execute(
                "DELETE FROM memory_records WHERE conversation_id = ? RETURNING id", (conv_id,)
            )
            done.records = len(list(await cur.fetchall()))
            await cur.close()
        done.scrubbed = await self.scrub()
        return done

    async def forget_everything(self) -> Forgotten:
        """Every conversation, note, record and vector (the model facts newt
        measured stay: they hold no words of the user's)."""
        done = Forgotten()
        async with self.db.transaction() as conn:
            counted = await _all(
                conn,
                "SELECT (SELECT count(*) FROM memory_records), (SELECT count(*) FROM notes),"
                " (SELECT count(*) FROM conversations),"
                " (SELECT count(*) FROM turns WHERE kind = 'turn')",
            )
            done.records, done.notes, done.conversations, done.messages = map(int, counted[0])
            await conn.execute("DELETE FROM conversations")
            await conn.execute("DELETE FROM notes")
            await conn.execute("DELETE FROM memory_records")
        done.scrubbed = await self.scrub()
        return done

    async def _hand_to_forks(self, conn: aiosqlite.Connection, conv_id: str) -> None:
        """Records rooted in `conv_id` that a fork's copies share move to the
        oldest copy (renamed to its id), which becomes the root of the others."""
        roots = await _all(
            conn,
            "SELECT t.id, (SELECT min(c.id) FROM turns c WHERE c.copied_from = t.id"
            " AND c.conversation_id != t.conversation_id) FROM turns t"
            " WHERE t.conversation_id = ? AND t.copied_from IS NULL",
            (conv_id,),
        )
        for root, heir in roots:
            if heir is None:
                continue
            await conn.execute("UPDATE turns SET copied_from = NULL WHERE id = ?", (heir,))
            await conn.execute(
                "UPDATE turns SET copied_from = ? WHERE copied_from = ?", (heir, root)
            )
            await conn.execute(
                "UPDATE memory_records SET turn_id = ?,"
                " conversation_id = (SELECT conversation_id FROM turns WHERE id = ?),"
                " key = substr(key, 1, 1) || ? || substr(key, ?) WHERE turn_id = ?",
                (heir, heir, str(heir), 2 + len(str(root)), root),
            )

    async def scrub(self) -> bool:
        """Merge the FTS5 index and truncate the WAL; False when another
        connection kept the WAL in use (it is truncated when that one lets go)."""
        async with self.db.transaction() as conn:
            await conn.execute("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')")
        for _ in range(CHECKPOINT_TRIES):
            async with self.db._tx_lock:  # no transaction of ours may be open
                rows = await _all(self.db.conn, "PRAGMA wal_checkpoint(TRUNCATE)")
            if not rows or int(rows[0][0]) == 0:
                return True
            await asyncio.sleep(0.1)
        return False


async def _all(
    conn: aiosqlite.Connection, sql: str, params: Sequence[object] = ()
) -> list[aiosqlite.Row]:
    return list(await conn.execute_fetchall(sql, params))


def _replace_strings(value: Any, pattern: re.Pattern[str], new: str) -> Any:
    if isinstance(value, str):
        return pattern.sub(new, value)
    if isinstance(value, list):
        return [_replace_strings(v, pattern, new) for v in value]
    if isinstance(value, dict):
        return {k: _replace_strings(v, pattern, new) for k, v in value.items()}
    return value
