"""Conversations and their durable turn log."""

from __future__ import annotations

import builtins
import json
import re
import uuid
from collections.abc import Sequence

import aiosqlite

from newt.store.db import Database
from newt.store.forgotten import SHOWN_MESSAGES
from newt.store.models import Conversation, RecordRole, ReplyDetails, StoredTurn, TurnStatus
from newt.store.records import insert_record
from newt.store.turn_edits import mark_replaced

TITLE_CHARS = 60


# Attached files ride in the stored prompt (newt/agent/turn/attachments.py); a
# title is what the user typed, not the file's content.
_ATTACHMENT = re.compile(r"<attachment path=\"[^\"]*\">.*?</attachment>", re.DOTALL)


def make_title(text: str) -> str:
    """A one-line title from the first user message (attachments left out)."""
    line = " ".join(_ATTACHMENT.sub(" ", text).split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


def _turn(row: aiosqlite.Row) -> StoredTurn:
    return StoredTurn(
        id=row["id"],
        conversation_id=row["conversation_id"],
        kind=row["kind"],
        status=row["status"],
        user=row["user"],
        assistant=row["assistant"],
        tokens_in=row["tokens_in"],
        tokens_out=row["tokens_out"],
        resident_turns=row["resident_turns"],
        used_after=row["used_after"],
        tool_events=json.loads(row["tool_events"] or "[]"),
        error=row["error"],
        created_at=row["created_at"],
        thinking=row["thinking"],
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        reply_seconds=row["reply_seconds"],
        tokens_estimated=bool(row["tokens_estimated"]),
        stopped_for_length=bool(row["stopped_for_length"]),
        replaced_by=row["replaced_by"],
        copied_from=row["copied_from"],
        attachments=json.loads(row["attachments"] or "[]"),
    )


def _conversation(row: aiosqlite.Row) -> Conversation:
    return Conversation(
        id=row["id"],
        title=row["title"],
        model=row["model"],
        base_url=row["base_url"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        turn_count=row["turn_count"],
        message_count=row["message_count"],
        parent_id=row["parent_id"],
        parent_title=row["parent_title"],
        incognito=bool(row["incognito"]),
    )


_CONVERSATION_SELECT = f"""
    SELECT c.*, (SELECT COUNT(*) FROM turns t
                 WHERE t.conversation_id = c.id AND t.kind = 'turn'
                 AND t.replaced_by IS NULL) AS turn_count,
           (SELECT {SHOWN_MESSAGES}
            FROM turns t WHERE t.conversation_id = c.id AND t.kind = 'turn'
                 AND t.replaced_by IS NULL) AS message_count,
           (SELECT p.title FROM conversations p WHERE p.id = c.parent_id) AS parent_title
    FROM conversations c
"""


class ConversationRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def create(
        self, *, title: str = "", model: str = "", base_url: str = "", incognito: bool = False
    ) -> Conversation:
        now = self.db.clock()
        conv_id = uuid.uuid4().hex
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO conversations(id, title, model, base_url, created_at, updated_at,"
                " incognito) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (conv_id, title, model, base_url, now, now, int(incognito)),
            )
        return Conversation(conv_id, title, model, base_url, now, now, 0, incognito=incognito)

    async def rename(self, conv_id: str, title: str) -> None:
        """Give a conversation the user's own title (one line, not empty)."""
        title = " ".join(title.split())
        if not title:
            raise ValueError("a title cannot be empty")
        async with self.db.transaction() as conn:
            cur = await conn.execute(
                "UPDATE conversations SET title = ? WHERE id = ? RETURNING id", (title, conv_id)
            )
            found = await cur.fetchone()
            await cur.close()
        if found is None:
            raise KeyError(conv_id)

    async def get(self, conv_id: str) -> Conversation | None:
        cur = await self.db.conn.execute(_CONVERSATION_SELECT + " WHERE c.id = ?", (conv_id,))
        row = await cur.fetchone()
        return _conversation(row) if row else None

    async def list(self, limit: int | None = None) -> builtins.list[Conversation]:
        sql = _CONVERSATION_SELECT + " ORDER BY c.updated_at DESC, c.rowid DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        cur = await self.db.conn.execute(sql)
        return [_conversation(r) for r in await cur.fetchall()]

    async def latest(self) -> Conversation | None:
        found = await self.list(limit=1)
        return found[0] if found else None

    async def find_by_prefix(self, prefix: str) -> builtins.list[Conversation]:
        """Conversations whose id starts with `prefix` (for `-r ID`)."""
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        cur = await self.db.conn.execute(
            _CONVERSATION_SELECT + " WHERE c.id LIKE ? ESCAPE '\\' ORDER BY c.updated_at DESC",
            (escaped + "%",),
        )
        return [_conversation(r) for r in await cur.fetchall()]

    async def search(self, text: str, limit: int = 50) -> builtins.list[Conversation]:
        """Conversations whose title or any turn contains `text` (case-insensitive)."""
        if not text.strip():
            return await self.list(limit=limit)
        like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        cur = await self.db.conn.execute(
            _CONVERSATION_SELECT
            + """ WHERE c.title LIKE ? ESCAPE '\\' OR EXISTS (
                    SELECT 1 FROM turns t WHERE t.conversation_id = c.id
                    AND t.replaced_by IS NULL
                    AND (t.user LIKE ? ESCAPE '\\' OR t.assistant LIKE ? ESCAPE '\\'))
                ORDER BY c.updated_at DESC LIMIT ?""",
            (like, like, like, limit),
        )
        return [_conversation(r) for r in await cur.fetchall()]

    async def set_incognito(self, conv_id: str, on: bool) -> None:
        """Whether memory keeps this conversation out (its later turns are not indexed)."""
        async with self.db.transaction() as conn:
            await conn.execute(
                "UPDATE conversations SET incognito = ? WHERE id = ?", (int(on), conv_id)
            )

    async def set_model(self, conv_id: str, model: str, base_url: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "UPDATE conversations SET model = ?, base_url = ? WHERE id = ?",
                (model, base_url, conv_id),
            )

    async def delete(self, conv_id: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute("DELETE FROM conversations WHERE id = ?", (conv_id,))


class TurnRepo:
    """The append-only durable log of one or all conversations."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def add_pending(
        self, conv_id: str, user: str, *, attachments: Sequence[dict[str, object]] = ()
    ) -> int:
        """Persist the user's words before anything is sent: they must never be lost."""
        now = self.db.clock()
        async with self.db.transaction() as conn:
            cur = await conn.execute(
                "INSERT INTO turns(conversation_id, kind, status, user, attachments, created_at)"
                " VALUES (?, 'turn', 'pending', ?, ?, ?)",
                (conv_id, user, json.dumps(list(attachments)), now),
            )
            turn_id = cur.lastrowid
            await conn.execute(
                "UPDATE conversations SET updated_at = ?,"
                " title = CASE WHEN title = '' THEN ? ELSE title END WHERE id = ?",
                (now, make_title(user), conv_id),
            )
        assert turn_id is not None
        return turn_id

    async def complete(
        self,
        turn_id: int,
        assistant: str,
        *,
        status: TurnStatus = "complete",
        tokens_in: int | None = None,
        tokens_out: int | None = None,
        tool_events: Sequence[dict[str, object]] = (),
        details: ReplyDetails | None = None,
        replaces: int | None = None,
        recall_reply: bool = True,
    ) -> None:
        """Finish a pending turn and index it for recall in the same transaction.

        Only the user's words and the answer are indexed: the reasoning in
        `details` is kept for the screen and exports, never recalled, and a
        reply that was no answer (`recall_reply` False: newt.non_answers) is
        kept in the log but never indexed. With `replaces`, that turn is
        marked replaced by this one in the same transaction."""
        now = self.db.clock()
        d = details or ReplyDetails()
        async with self.db.transaction() as conn:
            cur = await conn.execute(
                "UPDATE turns SET assistant = ?, status = ?, tokens_in = ?, tokens_out = ?,"
                " tool_events = ?, error = NULL, thinking = ?, prompt_tokens = ?,"
                " completion_tokens = ?, reply_seconds = ?, tokens_estimated = ?,"
                " stopped_for_length = ?"
                " WHERE id = ? RETURNING conversation_id, user, created_at",
                (
                    assistant,
                    status,
                    tokens_in,
                    tokens_out,
                    json.dumps(list(tool_events)),
                    d.thinking,
                    d.prompt_tokens,
                    d.completion_tokens,
                    d.reply_seconds,
                    int(d.tokens_estimated),
                    int(d.stopped_for_length),
                    turn_id,
                ),
            )
            row = await cur.fetchone()
            await cur.close()
            if row is None:
                raise KeyError(f"no turn {turn_id}")
            conv_id, user, said_at = row[0], row[1], row[2]
            await conn.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conv_id)
            )
            said: tuple[tuple[RecordRole, str, str], ...] = (
                ("user", f"t{turn_id}", user),
                ("assistant", f"r{turn_id}", assistant if recall_reply else ""),
            )
            for role, key, text in said:
                if text.strip():
                    await insert_record(
                        conn,
                        key=key,
                        source="turn",
                        content=text,
                        conversation_id=conv_id,
                        turn_id=turn_id,
                        created_at=now,
                        role=role,
                        said_at=said_at,
                    )
            if replaces is not None:
                await mark_replaced(conn, replaces, turn_id)

    async def fail(self, turn_id: int, error: str) -> None:
        """Mark a pending turn failed; its user text stays for a retry."""
        async with self.db.transaction() as conn:
            await conn.execute(
                "UPDATE turns SET status = 'failed', error = ? WHERE id = ?", (error, turn_id)
            )

    async def delete(self, turn_id: int) -> None:
        async with self.db.transaction() as conn:
            await conn.execute("DELETE FROM turns WHERE id = ?", (turn_id,))

    async def add_compaction(
        self,
        conv_id: str,
        record: str,
        *,
        resident_turns: int,
        used_after: int,
        summary: str | None = None,
    ) -> int:
        """Append a compaction record to the log and index `summary` (the record's
        text without its frame; the whole record when not given) for recall, so
        the frame's words never match a query and a capsule is never just the
        frame's first line."""
        now = self.db.clock()
        async with self.db.transaction() as conn:
            cur = await conn.execute(
                "INSERT INTO turns(conversation_id, kind, status, user, assistant,"
                " resident_turns, used_after, created_at)"
                " VALUES (?, 'compaction', 'complete', ?, '', ?, ?, ?)",
                (conv_id, record, resident_turns, used_after, now),
            )
            turn_id = cur.lastrowid
            assert turn_id is not None
            await insert_record(
                conn,
                key=f"c{turn_id}",
                source="compaction",
                content=record if summary is None else summary,
                conversation_id=conv_id,
                turn_id=turn_id,
                created_at=now,
            )
        return turn_id

    async def shape(self, conv_id: str) -> tuple[int, int | None, int]:
        """(rows, newest id, pending rows) of a conversation's log: cheap to
        compare, and changed by any other writer's append or completion."""
        cur = await self.db.conn.execute(
            "SELECT count(*), max(id), coalesce(sum(status = 'pending'), 0)"
            " FROM turns WHERE conversation_id = ?",
            (conv_id,),
        )
        row = await cur.fetchone()
        assert row is not None
        return int(row[0]), row[1], int(row[2])

    async def for_conversation(self, conv_id: str) -> list[StoredTurn]:
        cur = await self.db.conn.execute(
            "SELECT * FROM turns WHERE conversation_id = ? ORDER BY id", (conv_id,)
        )
        return [_turn(r) for r in await cur.fetchall()]

    async def get(self, turn_id: int) -> StoredTurn | None:
        cur = await self.db.conn.execute("SELECT * FROM turns WHERE id = ?", (turn_id,))
        row = await cur.fetchone()
        return _turn(row) if row else None
