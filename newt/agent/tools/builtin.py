"""The tools offered to the model and their execution.

Tool results are plain text fed back to the model. Errors from a tool are
results too (the model can correct itself); they never abort the turn.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "save_note",
            "description": (
                "Keep, change or drop a short durable note about the user or the work "
                "(preferences, names, decisions). Notes are shown to you in every conversation."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["add", "replace", "remove"]},
                    "content": {
                        "type": "string",
                        "description": "the note to add, or the new text for replace",
                    },
                    "old_text": {
                        "type": "string",
                        "description": "a unique part of the note to replace or remove",
                    },
                },
                "required": ["action"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "recall_memory",
            "description": (
                "Search everything said in earlier turns, earlier conversations and notes. "
                "Returns verbatim lines by the day they were said; one cut short ends in …"
            ),
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "fetch_record",
            "description": (
                "Return one memory record in full, verbatim: by its key (e.g. t42), or by"
                " the first words of a recalled line cut short (ending in …)."
            ),
            "parameters": {
                "type": "object",
                "properties": {"key": {"type": "string", "description": "a key or a line's words"}},
                "required": ["key"],
            },
        },
    },
]

MAX_TOOL_ROUNDS = 3
"""Rounds of tool calls in one turn; the round after them is asked without tools.
Memory is already in the request: a model that needs more is looping."""
MAX_SHOWN_RESULT_CHARS = 400_000
"""Longest result a tool block shows (and the turn keeps); cut by cap_result too."""


@dataclass
class ToolOutcome:
    result: str
    error: bool = False
    notice: str | None = None
    """For the user, not the model (e.g. an MCP server died, print mode skipped a call)."""
    recallable: bool = False
    """Index the result for recall with the turn (results from outside newt's memory)."""


# A handler returns its text, or a ToolOutcome when it has more to say (MCP tools).
ToolHandler = Callable[[dict[str, Any]], Awaitable[str | ToolOutcome]]


async def run_tool(
    handlers: dict[str, ToolHandler], name: str, arguments: dict[str, Any]
) -> ToolOutcome:
    handler = handlers.get(name)
    if handler is None:
        return ToolOutcome(f"error: there is no tool named {name!r}", error=True)
    try:
        result = await handler(arguments)
        return result if isinstance(result, ToolOutcome) else ToolOutcome(result)
    except (KeyError, TypeError, ValueError, LookupError) as exc:
        return ToolOutcome(f"error: {exc}", error=True)
    except Exception as exc:  # a tool failure must not end the user's turn
        return ToolOutcome(f"error: {type(exc).__name__}: {exc}", error=True)


def cap_result(text: str, max_tokens: int, tokens_for: Callable[[str], int]) -> str:
    """A tool result cut to fit `max_tokens` (as `tokens_for` counts), saying so.

    The one cut of a tool result, with the one note: the model sees the cut
    (and how to get the rest) instead of a request that overflows the context
    and is mistaken for a history overflow; a tool block shows at most
    MAX_SHOWN_RESULT_CHARS (`tokens_for=len`), cut the same way.
    """
    if tokens_for(text) <= max_tokens:
        return text
    note = (
        "\n[result cut to fit the context window: {shown:,} of {total:,} characters shown; "
        "ask for a narrower part if you need more]"
    )
    lo, hi = 0, len(text)
    room = max(0, max_tokens - tokens_for(note.format(shown=len(text), total=len(text))))
    while lo < hi:  # binary search: estimates grow with length
        mid = (lo + hi + 1) // 2
        if tokens_for(text[:mid]) <= room:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + note.format(shown=lo, total=len(text))


def tool_call_message(calls: list[Any], text: str) -> dict[str, Any]:
    """The assistant message that carries the model's tool calls back to it."""
    return {
        "role": "assistant",
        "content": text or None,
        "tool_calls": [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": c.raw_arguments or json.dumps(c.arguments),
                },
            }
            for c in calls
        ],
    }
