"""Listing and exporting conversations (no secrets: the store never holds any)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

from newt.files import write_private
from newt.store import Conversation, Store, StoredTurn
from newt.store.live_log import live_rows
from newt.text import strip_terminal_escapes


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def format_listing(conversations: Sequence[Conversation]) -> str:
    """`newt list`: id, title, last update, messages (the user's and the replies);
    aligned columns."""
    rows = [
        (
            c.id[:12],
            _when(c.updated_at),
            str(c.message_count),
            strip_terminal_escapes(c.title) or "(untitled)",
        )
        for c in conversations
    ]
    header = ("ID", "UPDATED", "MESSAGES", "TITLE")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    lines = []
    for r in [header, *rows]:
        lines.append(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]}")
    return "\n".join(lines) + "\n"


def _turn_md(turn: StoredTurn) -> str:
    if turn.kind == "compaction":
        return (
            "---\n\n> **Context compacted here.** Older turns were folded into this summary "
            "(reference only):\n>\n"
            + "\n".join("> " + line for line in turn.user.splitlines())
            + "\n\n---\n"
        )
    parts = [f"## User\n\n{turn.user}\n"]
    if turn.status in ("pending", "failed"):
        note = f" ({turn.error})" if turn.error else ""
        parts.append(f"*Not answered{note}.*\n")
        return "\n".join(parts)
    for event in turn.tool_events:
        parts.append(f"> tool `{event.get('name', '?')}`: {str(event.get('result', ''))[:200]}\n")
    if turn.thinking:
        # marked as the model's reasoning, apart from the answer
        parts.append(
            "<details><summary>Thinking</summary>\n\n"
            + "\n".join("> " + line for line in turn.thinking.splitlines())
            + "\n\n</details>\n"
        )
    label = "Assistant (interrupted)" if turn.status == "interrupted" else "Assistant"
    parts.append(f"## {label}\n\n{turn.assistant}\n")
    return "\n".join(parts)


async def export_conversation(store: Store, conv: Conversation, fmt: str) -> str:
    # the conversation as it stands: turns replaced by regenerate/edit are left out
    turns = live_rows(await store.turns.for_conversation(conv.id))
    if fmt == "json":
        payload = {
            "id": conv.id,
            "title": conv.title,
            "model": conv.model,
            "created_at": conv.created_at,
            "updated_at": conv.updated_at,
            "parent_id": conv.parent_id,
            "turns": [
                {
                    "kind": t.kind,
                    "status": t.status,
                    "user": t.user,
                    "assistant": t.assistant,
                    "thinking": t.thinking,
                    "prompt_tokens": t.prompt_tokens,
                    "completion_tokens": t.completion_tokens,
                    "reply_seconds": t.reply_seconds,
                    "tokens_estimated": t.tokens_estimated,
                    "tokens_in": t.tokens_in,
                    "tokens_out": t.tokens_out,
                    "resident_turns": t.resident_turns,
                    "used_after": t.used_after,
                    "tool_events": t.tool_events,
                    "created_at": t.created_at,
                }
                for t in turns
            ],
        }
        # ASCII-only: control characters become \\u escapes, so the data stays
        # verbatim but nothing in it can act on a terminal
        return json.dumps(payload, indent=2) + "\n"
    head = (
        f"# {conv.title or 'Conversation'}\n\n*{conv.id} · {conv.model or 'unknown model'} · "
        f"{_when(conv.created_at)}*\n\n"
    )
    # Markdown is read in terminals and editors: model text loses escape sequences
    return strip_terminal_escapes(head + "\n".join(_turn_md(t) for t in turns))


def write_export(path: Path, text: str) -> None:
    """Write an export file private to the user (0600 whatever the umask)."""
    write_private(path, text)
