"""newt's own format: what `newt export --format json` writes (one object), or JSONL of them.

The format, so other tools can write it: an object with `id`, `title`, `created_at`,
`updated_at` (epoch seconds) and `turns`, each with `user`, `assistant`, `created_at`
(when it was said) and optionally `kind` ("turn" or "compaction"), `status`, `thinking`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from newt.importing.model import (
    ImportedConversation,
    ImportedTurn,
    ImportFormatError,
    Item,
    Refused,
    why,
)

SOURCE = "newt"
_STATUSES = ("complete", "interrupted", "failed", "pending")


def _conversation(conv: dict[str, Any]) -> ImportedConversation:
    turns = []
    for n, t in enumerate(conv["turns"]):
        if t.get("kind", "turn") != "turn":
            continue  # a compaction row is the working set's, rebuilt on open from the turns
        if not isinstance(t["user"], str) or not isinstance(t.get("assistant") or "", str):
            raise ValueError(f"turn {n}: `user`/`assistant` are not text")
        status = t.get("status") or "complete"
        if status not in _STATUSES:
            raise ValueError(f"turn {n}: unknown status {status!r}")
        said = t["created_at"]
        if isinstance(said, bool) or not isinstance(said, int | float):
            raise ValueError(f"turn {n}: `created_at` is not epoch seconds")
        turns.append(
            ImportedTurn(
                t["user"], t.get("assistant") or "", float(said), (), status, t.get("thinking")
            )
        )
    created = conv["created_at"]
    if isinstance(created, bool) or not isinstance(created, int | float):
        raise ValueError("`created_at` is not epoch seconds")
    return ImportedConversation(
        source=SOURCE,
        source_id=str(conv["id"]),
        title=str(conv.get("title") or ""),
        created_at=float(created),
        updated_at=float(conv["updated_at"]) if conv.get("updated_at") is not None else None,
        turns=turns,
        model=str(conv.get("model") or ""),
    )


def _objects(path: Path) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportFormatError(path, f"cannot read it ({exc})") from None
    try:
        whole = json.loads(text)
        return whole if isinstance(whole, list) else [whole]
    except json.JSONDecodeError:
        pass
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                found.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ImportFormatError(path, f"line {n} is not JSON ({exc.msg})") from None
    return found


def read(path: Path) -> Iterator[Item]:
    objects = _objects(path)
    if not objects or not all(isinstance(o, dict) and "turns" in o for o in objects):
        raise ImportFormatError(path, "not newt JSON (objects with `id`, `title` and `turns`)")
    for n, conv in enumerate(objects):
        try:
            yield _conversation(conv)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            yield Refused(str(conv.get("id") or f"#{n}"), f"conversation {n}: {why(exc)}")
