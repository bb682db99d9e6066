"""The summarizer's request starts as the chat requests do, when it knows how they start."""

from __future__ import annotations

import io

from newt.agent.session.summary_request import (
    HEAD_BYTES_MAX,
    head_bytes,
    read_head,
    summary_messages,
)
from newt.backend.types import RequestHead
from newt.memory import MemMessage

ASKED = [MemMessage("system", "Write the summary."), MemMessage("user", "Turns removed: ...")]
TOOLS = [{"type": "function", "function": {"name": "recall_memory", "parameters": {}}}]


def test_under_the_chats_head_the_instructions_open_the_user_message() -> None:
    sent = summary_messages(ASKED, RequestHead("You are newt.", TOOLS))
    assert sent == [
        {"role": "system", "content": "You are newt."},
        {"role": "user", "content": "Write the summary.\n\nTurns removed: ..."},
    ]


def test_without_a_head_the_messages_go_as_written() -> None:
    assert summary_messages(ASKED, None) == [
        {"role": "system", "content": "Write the summary."},
        {"role": "user", "content": "Turns removed: ..."},
    ]


def test_the_head_crosses_a_pipe_whole_or_not_at_all() -> None:
    head = RequestHead("You are newt.\nNotes: likes tea", TOOLS)
    assert read_head(io.BytesIO(head_bytes(head))) == head
    assert head_bytes(None) == b""
    assert head_bytes(RequestHead("x" * HEAD_BYTES_MAX)) == b""  # too large: not handed on
    for garbage in (b"", b"not json", b"[1, 2]", b'{"system": 3}'):
        assert read_head(io.BytesIO(garbage)) is None
    assert read_head(io.BytesIO(b'{"system": "s", "tools": []}')) == RequestHead("s", None)
