"""ChatGPT's data export: the zip, or its conversations.json (a tree of message nodes each).

The branch the user last saw (`current_node`) is the conversation; every other
leaf of the tree (an edited prompt, a regenerated reply) is one of its forks."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from newt.importing.model import (
    ImportedConversation,
    ImportedFork,
    ImportedTurn,
    ImportFormatError,
    Item,
    Refused,
    pair_messages,
    parse_time,
    reference,
    why,
)

SOURCE = "chatgpt"


def load_json(path: Path, member: str = "conversations.json") -> Any:
    """The JSON of `path`, or of `member` inside it when it is a zip."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                names = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == member]
                if not names:
                    raise ImportFormatError(path, f"the zip holds no {member}")
                return json.loads(archive.read(names[0]).decode("utf-8"))
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportFormatError(path, f"not JSON ({exc})") from None
    except (OSError, zipfile.BadZipFile) as exc:
        raise ImportFormatError(path, f"cannot read it ({exc})") from None


def _part_text(part: object) -> tuple[str, tuple[str, ...]]:
    if isinstance(part, str):
        return part, ()
    if isinstance(part, dict):
        kind = str(part.get("content_type", "part"))
        if "text" in part and isinstance(part["text"], str):
            return part["text"], ()
        name = str(part.get("asset_pointer") or part.get("name") or kind)
        size = part.get("size_bytes")
        kind_word = "image" if "image" in kind else "file"
        return "", (reference(kind_word, name, f"{size} bytes" if size else ""),)
    return "", ()


def _path(mapping: dict[str, Any], node_id: str | None) -> list[dict[str, Any]]:
    """The nodes from the root to `node_id`."""
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    while node_id is not None:
        if node_id in seen:
            raise ValueError("the message tree has a cycle")
        seen.add(node_id)
        node = mapping.get(node_id)
        if node is None:
            raise ValueError(f"node {node_id!r} is not in `mapping`")
        chain.append(node)
        node_id = node.get("parent")
    return chain[::-1]


def _leaves(mapping: dict[str, Any]) -> list[str]:
    return [str(n["id"]) for n in mapping.values() if not n.get("children")]


def _turns(nodes: list[dict[str, Any]], created: float) -> list[ImportedTurn]:
    messages: list[tuple[str, str, float, tuple[str, ...]]] = []
    for node in nodes:
        msg = node.get("message")
        if not msg:
            continue
        role = msg["author"]["role"]
        content = msg.get("content") or {}
        texts: list[str] = []
        refs: list[str] = []
        for part in content.get("parts") or []:
            text, found = _part_text(part)
            if text:
                texts.append(text)
            refs.extend(found)
        kind = content.get("content_type")
        if kind not in (None, "text", "multimodal_text") and role != "user":
            continue  # code runs, browsing and tool output are not what was said
        for item in (msg.get("metadata") or {}).get("attachments") or []:
            refs.append(reference("file", str(item.get("name", "?"))))
        when = msg.get("create_time")
        said = parse_time(when, where="create_time") if when is not None else created
        messages.append((role, "\n".join(texts), said, tuple(refs)))
    return pair_messages(messages)


def _forks(
    mapping: dict[str, Any], main_leaf: str | None, main: list[ImportedTurn], created: float
) -> list[ImportedFork]:
    """The other branches (an edited prompt, a regenerated reply), each as the turns it
    shares with the branch last seen and the turns of its own; one fork per leaf."""
    forks: list[ImportedFork] = []
    seen: set[tuple[int, str]] = set()
    for leaf in _leaves(mapping):
        if leaf == main_leaf:
            continue
        turns = _turns(_path(mapping, leaf), created)
        shared = 0
        while shared < min(len(turns), len(main)) and turns[shared] == main[shared]:
            shared += 1
        own = turns[shared:]
        key = (shared, repr(own))
        if own and key not in seen:
            seen.add(key)
            forks.append(ImportedFork(shared, own))
    return forks


def _conversation(conv: dict[str, Any]) -> ImportedConversation:
    created = parse_time(conv.get("create_time"), where="create_time")
    mapping = conv["mapping"]
    if not isinstance(mapping, dict):
        raise ValueError("`mapping` is not an object")
    node_id = conv.get("current_node")  # the branch the user last saw
    if node_id is None:  # no pointer: the newest leaf
        leaves = _leaves(mapping)
        node_id = leaves[-1] if leaves else None
    turns = _turns(_path(mapping, node_id), created)
    return ImportedConversation(
        source=SOURCE,
        source_id=str(conv.get("conversation_id") or conv.get("id") or created),
        title=str(conv.get("title") or ""),
        created_at=created,
        updated_at=parse_time(conv["update_time"], where="update_time")
        if conv.get("update_time") is not None
        else None,
        turns=turns,
        model=str(conv.get("default_model_slug") or ""),
        forks=_forks(mapping, node_id, turns, created) if turns else [],
    )


def read(path: Path) -> Iterator[Item]:
    data = load_json(path)
    if not isinstance(data, list) or not all(isinstance(c, dict) and "mapping" in c for c in data):
        raise ImportFormatError(
            path, "not a ChatGPT export (a list of conversations with `mapping`)"
        )
    for n, conv in enumerate(data):
        try:
            yield _conversation(conv)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            ident = str(conv.get("conversation_id") or conv.get("id") or f"#{n}")
            yield Refused(ident, f"conversation {n} ({conv.get('title')!r}): {why(exc)}")
