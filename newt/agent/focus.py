"""A question that recall answers: send it with the evidence and the last exchange.

When the user asks a short question and one recalled capsule holds every
search word of it ("What is the locker code for the amber harbor?" and "Note
for later: the locker code for the amber harbor is 9607."), the question is
about that stored statement, not about the conversation of the last few
minutes. A small model reads all of that conversation, its own replies
included, before the question, and it leans on them: replaying the dev set's
question requests (SmolLM2-135M, `-c 2048`, 14 requests, 4-8 seeds each), the
reply named the fact in 61 of 112 as sent, 69 of 112 with the last two
exchanges, 82 of 112 with no history and 42 of 56 with the last exchange.

So such a request carries the system prompt (and the compaction record, if
any, which stands for the conversation's start), the last exchange, the
evidence (without the record-keys line: replaying a dev run's focused
requests, 39 of 56 replies named the fact without it, 32 of 56 with it; the
model had answered "fetch_record with key t13") and the question. Only this
request changes: the working set, what is stored and the next turn are as
before. Its reported prompt size does not
describe the working set, so the memory counts the turn by estimate
(TokenBudget.sync_turn with no usage). `[recall] focus_questions = "off"`
sends the whole working set every time.

What it gives up: a correction the user made earlier than the last exchange
and still in the working set ("my gate changed to F12") is not in that one
request; the recalled statement is.
"""

from __future__ import annotations

from collections.abc import Sequence

from newt.memory.types import COMPACTION_MARKER, MemMessage
from newt.recall.fts_query import query_terms
from newt.recall.near_misses import words_held
from newt.recall.retention import RetentionReport

# A question longer than this is a request with context of its own.
MAX_QUESTION_WORDS = 25


def answered_by_evidence(text: str, report: RetentionReport | None) -> bool:
    """A short, single question whose every search word one capsule holds."""
    if report is None or not report.capsules:
        return False
    question = text.strip()
    if not question.endswith("?") or "\n" in question:
        return False
    if len(question.split()) > MAX_QUESTION_WORDS:
        return False
    terms = {t.lower() for t in query_terms(question)}
    if not terms:
        return False
    return any(words_held(c.excerpt, terms) == terms for c in report.capsules)


def focused(messages: Sequence[MemMessage]) -> list[MemMessage]:
    """The request's messages with the history cut to its last exchange.

    Kept: leading system messages, a compaction record right after them, the
    last user message and the assistant reply after it (with any tool
    messages between), and the new message (the last one)."""
    if len(messages) < 2:
        return list(messages)
    head = 0
    while head < len(messages) - 1 and messages[head].role == "system":
        head += 1
    if head < len(messages) - 1 and messages[head].content.startswith(COMPACTION_MARKER):
        head += 1
    history = list(messages[head:-1])
    start = len(history)
    for i in range(len(history) - 1, -1, -1):
        if history[i].role == "user":
            start = i
            break
    return [*messages[:head], *history[start:], messages[-1]]
