"""Claude's data export: conversations.json, `chat_messages` with `sender` human/assistant."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from newt.importing.chatgpt import load_json
from newt.importing.model import (
    ImportedConversation,
    ImportFormatError,
    Item,
    Refused,
    pair_messages,
    parse_time,
    reference,
    why,
)

SOURCE = "claude"
_ROLES = {"human": "user", "assistant": "assistant"}


def _text(msg: dict[str, Any]) -> str:
    content = msg.get("content")
    if isinstance(content, list) and content:
        pieces = [c.get("text", "") for c in content if c.get("type") == "text"]
        if any(pieces):
            return "\n\n".join(p for p in pieces if p)
    text = msg.get("text")
    return text if isinstance(text, str) else ""


def _refs(msg: dict[str, Any]) -> tuple[str, ...]:
    refs: list[str] = []
    for item in msg.get("attachments") or []:
        size = item.get("file_size")
        refs.append(
            reference("file", str(item.get("file_name") or "?"), f"{size} bytes" if size else "")
        )
    for item in msg.get("files") or []:
        refs.append(reference("file", str(item.get("file_name") or item.get("file_uuid") or "?")))
    return tuple(refs)


def _conversation(conv: dict[str, Any]) -> ImportedConversation:
    created = parse_time(conv["created_at"], where="created_at")
    messages = []
    for msg in conv["chat_messages"]:
        role = _ROLES.get(msg["sender"])
        if role is None:
            raise ValueError(f"unknown sender {msg['sender']!r}")
        said = parse_time(msg.get("created_at") or created, where="created_at")
        messages.append((role, _text(msg), said, _refs(msg)))
    return ImportedConversation(
        source=SOURCE,
        source_id=str(conv["uuid"]),
        title=str(conv.get("name") or ""),
        created_at=created,
        updated_at=parse_time(conv["updated_at"], where="updated_at")
        if conv.get("updated_at")
        else None,
        turns=pair_messages(messages),
    )


def read(path: Path) -> Iterator[Item]:
    data = load_json(path)
    if not isinstance(data, list) or not all(
        isinstance(c, dict) and "chat_messages" in c for c in data
    ):
        raise ImportFormatError(
            path, "not a Claude export (a list of conversations with `chat_messages`)"
        )
    for n, conv in enumerate(data):
        try:
            yield _conversation(conv)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            ident = str(conv.get("uuid") or f"#{n}")
            yield Refused(ident, f"conversation {n} ({conv.get('name')!r}): {why(exc)}")
