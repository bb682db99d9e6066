"""Tool calls a model wrote as text instead of the protocol's tool_calls.

Small local models often answer a request that offers tools with the call
itself as text: a fenced ```` ```json {"name": "recall_memory", "arguments":
{...}} ``` ````, the same object bare, or wrapped in Qwen's ``<tool_call>`` (or
``<tools>``) tags, or in doubled braces (``{{"name": ...}}``: a chat template
that shows the call's shape inside a Jinja string prints its braces twice, and
the model copies them), which a server that does not parse that model's format
passes through as the reply. Such a reply is a call, not an answer: `parse` finds it (only a reply
that starts with one or more such calls, each naming a tool that was offered
with an object of arguments; text before a call makes it prose), and
`ToolTextGate` holds back the start of a streamed reply for as long as it
could still be one, so the UI never flashes the JSON as the answer. It also
drops a reply's leading ``<tool_response>…</tool_response>`` blocks: Qwen's
template wraps tool results in them and a small model, after a call, may echo
one (seen with Qwen2.5-Coder-1.5B after save_note) before or instead of answering.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from newt.backend.types import ToolCall
from newt.non_answers import ARGUMENT_KEYS, NAME_KEYS

# Qwen's own call tag, and the tag its template lists the tools in, which
# Qwen2.5-Coder-1.5B was seen to wrap its calls in as well
WRAPPERS = (("<tool_call>", "</tool_call>"), ("<tools>", "</tools>"))
ECHO_OPEN, ECHO_CLOSE = "<tool_response>", "</tool_response>"
FENCE = "```"
FENCE_INFO = ("", "json", "tool_call", "tool_code")
MAX_HELD_CHARS = 8000  # a call longer than this is prose (or a runaway)
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class TextCalls:
    calls: list[ToolCall]
    rest: str  # what followed the calls (the model's comment on them): not an answer


def _call_from(obj: Any, tools: set[str], n: int) -> ToolCall | None:
    if not isinstance(obj, dict):
        return None
    inner = obj.get("function")
    if obj.get("type") == "function" and isinstance(inner, dict):
        obj = inner  # {"type": "function", "function": {"name": ..., "arguments": ...}}
    name = next((obj[k] for k in NAME_KEYS if isinstance(obj.get(k), str)), None)
    if name not in tools:
        return None
    keys = [k for k in ARGUMENT_KEYS if k in obj]
    arguments: Any = obj[keys[0]] if keys else {}
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return None
    if not isinstance(arguments, dict) or set(obj) - {*NAME_KEYS, *ARGUMENT_KEYS, "type", "id"}:
        return None
    return ToolCall(id=f"text-call-{n}", name=str(name), arguments=arguments, raw_arguments=raw)


def _objects(body: str) -> list[Any] | None:
    """The JSON value(s) a call block holds: one object, a list of them, or several
    objects one after another; None when it is not JSON."""
    found: list[Any] = []
    at = 0
    body = body.strip()
    while at < len(body):
        try:
            value, end = _DECODER.raw_decode(body, at)
        except ValueError:
            return None
        found.extend(value if isinstance(value, list) else [value])
        at = end
        while at < len(body) and body[at] in " \t\r\n,":
            at += 1
    return found or None


def _block(text: str) -> tuple[str, int] | None:
    """(the JSON inside, where the block ends) of the call block `text` starts with."""
    if text.startswith(FENCE):
        newline = text.find("\n")
        if newline < 0 or text[3:newline].strip().lower() not in FENCE_INFO:
            return None
        close = text.find(FENCE, newline)
        return (text[newline:close], close + len(FENCE)) if close >= 0 else None
    for open_tag, close_tag in WRAPPERS:
        if text.startswith(open_tag):
            close = text.find(close_tag)
            return (text[len(open_tag) : close], close + len(close_tag)) if close >= 0 else None
    if text.startswith("{{"):  # a call in doubled braces: the object inside, then "}"
        try:
            _, end = _DECODER.raw_decode(text, 1)
        except ValueError:
            return None
        close = len(text) - len(text[end:].lstrip())
        return (text[1:end], close + 1) if text[close : close + 1] == "}" else None
    if text.startswith(("{", "[")):
        try:
            _, end = _DECODER.raw_decode(text)
        except ValueError:
            return None
        return text[:end], end
    return None


def parse(text: str, tools: set[str]) -> TextCalls | None:
    """The calls a reply made as text, or None when it is an answer."""
    calls: list[ToolCall] = []
    rest = text.lstrip()
    while rest:
        block = _block(rest)
        if block is None:
            break
        objects = _objects(block[0])
        found = [_call_from(o, tools, len(calls) + i) for i, o in enumerate(objects or [])]
        if not found or any(c is None for c in found):
            break
        calls.extend(c for c in found if c is not None)
        rest = rest[block[1] :].lstrip()
    return TextCalls(calls, rest) if calls else None


_PREFIXES = (FENCE, *(open_tag for open_tag, _ in WRAPPERS), "{", "[")


def could_still_be_a_call(text: str, tools: set[str]) -> bool:
    """Whether a reply streamed so far may yet turn out to be a call (so it is held)."""
    s = text.lstrip()
    if not s:
        return True
    if len(s) > MAX_HELD_CHARS:
        return False
    if not any(s.startswith(p) or p.startswith(s) for p in _PREFIXES):
        return False
    if s.startswith(FENCE):
        newline = s.find("\n")
        info = (s[3:] if newline < 0 else s[3:newline]).strip().lower()
        if newline < 0:
            return any(i.startswith(info) for i in FENCE_INFO)
        if info not in FENCE_INFO:
            return False
        body = s[newline:].lstrip()
        if body and not body.startswith(("{", "[")):
            return False
    for open_tag, _ in WRAPPERS:
        if s.startswith(open_tag):
            body = s[len(open_tag) :].lstrip()
            if body and not body.startswith(("{", "[")):
                return False
    if s[0] in "{[" and not _json_start(s):
        return False
    if _block(s) is not None:  # one whole block: a call, or nothing to hold back
        return parse(s, tools) is not None
    return True


def _json_start(s: str) -> bool:
    """Whether `s` (starting with { or [) begins the way a call's JSON does."""
    after = s[1:].lstrip()
    if s[0] == "{" and after.startswith("{"):  # doubled braces: the inner object decides
        return _json_start(after) and after[1:].lstrip()[:1] != "}"
    return not after or after[0] in ('"}' if s[0] == "{" else "{]")


def _answer_start(text: str) -> int | None:
    """Where a reply's answer begins, past any leading `<tool_response>` blocks (a small
    model echoing the template's markup for a tool result, never an answer); None
    while the start is still only whitespace, part of that tag or an open block."""
    at = 0
    while True:
        rest = text[at:]
        stripped = rest.lstrip()
        if not stripped or ECHO_OPEN.startswith(stripped):
            return None
        if not stripped.startswith(ECHO_OPEN):
            return at + len(rest) - len(stripped) if at else 0
        close = stripped.find(ECHO_CLOSE)
        if close < 0:
            return None
        at += len(rest) - len(stripped) + close + len(ECHO_CLOSE)


class ToolTextGate:
    """Holds back the start of a streamed reply while it could be a call written as text.

    `feed` takes each delta and returns the text to show now; `finish` returns
    what was still held (an answer that only looked like a call) or "" when the
    reply is a call. Once the reply is clearly prose, everything passes at once.
    Leading `<tool_response>` blocks are dropped, shown never (`answer` is the
    reply without them), and so is a call the stream ended inside (cut at the
    reply cap: Qwen2.5-Coder-1.5B once put a whole answer in a save_note).
    """

    def __init__(self, tools: set[str]) -> None:
        self.tools = tools
        self.text = ""
        self.holding = bool(tools)
        self._start: int | None = None  # where the answer begins, once known
        self._shown = 0

    def _names_a_tool(self) -> bool:
        """Whether the held text, still open, names an offered tool as a call's name."""
        return any(re.search(rf'"{re.escape(n)}"', self.answer) for n in self.tools)

    @property
    def answer(self) -> str:
        return self.text[self._start :] if self._start is not None else ""

    def feed(self, delta: str) -> str:
        self.text += delta
        if self._start is None:
            self._start = _answer_start(self.text)
            if self._start is None:
                return ""
            self._shown = self._start
        if self.holding and could_still_be_a_call(self.answer, self.tools):
            return ""
        self.holding = False
        out, self._shown = self.text[self._shown :], len(self.text)
        return out

    def finish(self) -> tuple[TextCalls | None, str]:
        """(the calls, if the reply was them; the text still to show)."""
        if self._start is None:  # whitespace, or an echo never closed: no answer
            self._start = self._shown = len(self.text)
        calls = parse(self.answer, self.tools) if self.holding else None
        cut_call = calls is None and self.holding and self._names_a_tool()
        self.holding = False
        if calls is not None:
            return calls, ""
        if cut_call:  # a call the stream ended inside (the length cap): never an answer
            self._shown = len(self.text)
            self._start = len(self.text)
            return None, ""
        out, self._shown = self.text[self._shown :], len(self.text)
        return None, out
