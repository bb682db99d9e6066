"""Replies that are not answers: never recalled as evidence, never a summary's content.

`kind_of(reply)` names what a reply is when it is no answer, else None:

- "empty": nothing but whitespace;
- "call": a tool call written as text (fenced, bare, in doubled braces, in
  tags), whatever tool it names, or the chat template's own instruction for
  writing one copied back ("You may call one or more functions...");
- "placeholder": a short reply that talks about answering instead of
  answering ("To answer this question, I would recall...") or says it
  cannot know or remember;
- "refusal": a short reply that declines to help ("I'm sorry, but I can't
  assist with that.").

Why: a small model that fails a turn leaves text that reads like something
said. Recalled, that line rides in the next request beside the real facts,
and the model copies it into its next reply, so memory feeds on its own
failures. A reply cut at the length limit is judged by the caller (it knows
the finish reason). A leaf: the store, memory and the agent all ask it.
"""

from __future__ import annotations

import json
import re
from typing import Literal

NonAnswer = Literal["empty", "call", "placeholder", "refusal"]

# A placeholder or a refusal is short: a long reply that says "I would check" also says more.
PLACEHOLDER_MAX_WORDS = 60

# The keys a call written as text names its tool and arguments by (text_calls.py uses them).
NAME_KEYS = ("name", "function", "tool", "tool_name")
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
_DECODER = json.JSONDecoder()
# How a call written as text opens: a fence, a tag, then one or two braces.
_CALL_OPEN = re.compile(
    r"^\s*(?:```[\w-]*\s*)?(?:<(?:tool_call|tools|function[^>]*)>\s*)?(?=[\[{])", re.I
)
# A chat template's instruction for tool calls, copied back as a reply.
_TEMPLATE_WORDS = re.compile(
    r"you may call one or more functions|<function-name>|<args-json-object>"
    r"|function signatures within",
    re.I,
)
_PLACEHOLDERS = [
    re.compile(pattern, re.I)
    for pattern in (
        # talks about how it would answer
        r"\bto answer (?:this|your|the) question\b[^.]{0,60}\b(?:i|we) (?:would|will|need|must)",
        r"\b(?:i|we) (?:would|will|need to|must|should|can) (?:need to )?(?:first )?"
        r"(?:recall|search|look up|retrieve|consult|call|use) (?:the |my |our |your |a )?"
        r"(?:memory|memories|information|records?|earlier|previous|past|functions?|tools?)",
        # says it cannot know what memory holds
        r"\b(?:i|we) (?:do not|don't|cannot|can't|am unable to|am not able to|have no way to)"
        r" (?:have )?(?:access|recall|remember|retrieve|know|see)\b[^.]{0,80}"
        r"\b(?:information|memory|memories|earlier|previous|past|personal|conversations?|details)",
        r"\b(?:i have|there is|there's) no (?:information|record|memory|mention) (?:of|about|on)\b",
        r"\b(?:i|we) (?:do not|don't) have (?:any )?(?:information|details|records?|knowledge)"
        r" (?:of|about|on|regarding)\b(?![^.]*\bbut\b)",  # "..., but in 2023 it was": an answer
        r"\bas an ai\b",
    )
]
# A refusal declines the request itself: "can't assist with that", not "can't wait".
_REFUSAL = re.compile(
    r"\b(?:can[’']t|cannot|can not|won[’']t|will not|unable to|not able to)"
    r" (?:assist|help)(?: you)? with (?:that|this|it|your (?:request|question))\b",
    re.I,
)


def kind_of(reply: str) -> NonAnswer | None:
    """What `reply` is when it is no answer (see the module docstring), else None."""
    text = reply.strip()
    if not text:
        return "empty"
    if _is_call(text) or _TEMPLATE_WORDS.search(text):
        return "call"
    if len(text.split()) > PLACEHOLDER_MAX_WORDS:
        return None
    if any(p.search(text) for p in _PLACEHOLDERS):
        return "placeholder"
    return "refusal" if _REFUSAL.search(text) else None


def is_answer(reply: str, *, stopped_for_length: bool = False) -> bool:
    """Whether a stored reply may be recalled and summarized as something said."""
    return not stopped_for_length and kind_of(reply) is None


def _is_call(text: str) -> bool:
    """A reply that opens with a call's JSON: an object (or a list of them, or one
    in doubled braces) with a name key and an arguments key and nothing else."""
    opened = _CALL_OPEN.match(text)
    if opened is None:
        return False
    body = text[opened.end() :]
    if body.startswith("{{"):
        body = body[1:]
    try:
        value, _ = _DECODER.raw_decode(body)
    except ValueError:
        return _looks_like_a_cut_call(body)
    objects = value if isinstance(value, list) else [value]
    return bool(objects) and all(_call_shaped(o) for o in objects)


def _call_shaped(obj: object) -> bool:
    if not isinstance(obj, dict):
        return False
    inner = obj.get("function")
    if obj.get("type") == "function" and isinstance(inner, dict):
        obj = inner
    keys = set(obj)
    return (
        any(k in keys for k in NAME_KEYS)
        and any(k in keys for k in ARGUMENT_KEYS)
        and keys <= {*NAME_KEYS, *ARGUMENT_KEYS, "type", "id"}
    )


def _looks_like_a_cut_call(body: str) -> bool:
    """JSON that does not close (cut at the length limit) but opens as a call does."""
    head = re.match(r'\{\s*"(\w+)"\s*:\s*"[^"]*"\s*,\s*"(\w+)"\s*:', body)
    return head is not None and head[1] in NAME_KEYS and head[2] in ARGUMENT_KEYS
