"""Replacing a note's old words everywhere they were said: the log, titles, records.

When a note is corrected or removed, its old wording must not come back from
any path (a turn, a tool event, a conversation title, a recall record), so
every verbatim occurrence, case and spacing aside, is rewritten.
"""

from __future__ import annotations

import json
import re
from typing import Any

from newt.store.db import Database, fetch_all
from newt.store.forgotten import Forgotten
from newt.store.scrub import scrub


async def replace_text(db: Database, old: str, new: str) -> Forgotten:
    """Every verbatim occurrence of `old` (case and spacing aside) in the
    log, the records and the summaries becomes `new`: a corrected note's
    old words never come back from any path."""
    pattern = re.compile(r"\s+".join(map(re.escape, old.split())), re.IGNORECASE)
    done = Forgotten()
    first = old.split()[0].lower() if old.split() else ""
    if not first:
        return done
    like = f"%{first}%"
    async with db.transaction() as conn:
        rows = await fetch_all(
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
        titles = await fetch_all(
            conn, "SELECT id, title FROM conversations WHERE lower(title) LIKE ?", (like,)
        )
        for conv_id, title in titles:
            if pattern.sub(new, str(title)) != title:
                await conn.execute(
                    "UPDATE conversations SET title = ? WHERE id = ?",
                    (pattern.sub(new, str(title)), conv_id),
                )
        records = await fetch_all(
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
    done.scrubbed = await scrub(db)
    return done


def _replace_strings(value: Any, pattern: re.Pattern[str], new: str) -> Any:
    if isinstance(value, str):
        return pattern.sub(new, value)
    if isinstance(value, list):
        return [_replace_strings(v, pattern, new) for v in value]
    if isinstance(value, dict):
        return {k: _replace_strings(v, pattern, new) for k, v in value.items()}
    return value
