"""Telling the summarizer's request from a chat request, for fake servers.

A summary request starts as the chat requests do (their system message and
tools: newt/agent/session/summary_request.py), so only its content tells it
apart: the turns it is handed, under "Turns removed from the conversation".
"""

from __future__ import annotations

from typing import Any


def is_summary_request(body: Any) -> bool:
    messages = body.get("messages") if isinstance(body, dict) else None
    return any(
        "Turns removed from the conversation" in str(m.get("content"))
        for m in messages or []
        if isinstance(m, dict)
    )
