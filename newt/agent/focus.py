"""A question that recall answers: send it with its evidence alone.

When the user asks a short question and one recalled capsule holds every
search word of it ("What is the locker code for the amber harbor?" and "Note
for later: the locker code for the amber harbor is 9607."), the question is
about that stored statement, not about the conversation of the last few
minutes. A small model reads all of that conversation, its own replies
included, before the question, and it leans on them: replaying the dev set's
question requests (SmolLM2-135M, `-c 2048`, 14 requests, 4-8 seeds each), the
reply named the fact in 61 of 112 as sent, 69 of 112 with the last two
exchanges, 82 of 112 with no history and 42 of 56 with the last exchange.
Run end to end with the last exchange kept, the model copied its previous
reply in every failure of a dev run ("I was able to retrieve the desired
number by reversing the previous response", word for word).

So such a request carries the system prompt (the notes included), the
capsules that answer the question (the others only compete with them) in the
user's voice ("Earlier I told you:", recall/presentation.py) without the
record-keys line (the capsule answers the question; with the line the model
had answered "fetch_record with key t13"), and the question.
It is sampled at `[recall] focus_temperature` (0: the most likely answer)
unless the conversation set a temperature: it is a lookup, and at the
server's default 0.8 the small model garbles what it copies ("gate 30" for
E30; replayed dev requests named the fact 63 of 100 times at 0.8, 25 of 28 at
0.2). On the dev requests of benchmarks/focused_replies.py it named the fact
in 521 of 560 replies at 0.2 (4 seeds) and 138 of 140 at 0; the drift to
"I'm sorry for any confusion..." or to a reply without the value ("You have a
swimming lesson on Sunday.") is a sampled one. Only this request changes:
the working set, what is stored and the next turn are as before. Its reported
prompt size does not describe the working set, so the memory counts the turn
by estimate (TokenBudget.sync_turn with no usage). `[recall] focus_questions =
"off"` sends the whole working set every time.

The capsule must hold the question's search words, all but one at most (a
question of three or more words; see `enough_words`): in the dev set's plans
(seeds 1-8) three direct questions in 24 asked with a word their fact's
phrasing lacked ("time", "neighbour", "leave" for "boards"), and went out with
the whole working set while their capsule was there.

A question word naming the form of the value ("time", "hour") is held by a
value of that form: "What time is my piano lesson on Saturday?" against "On
Saturday I have piano at 2:50." is two words away otherwise, and every such
question went out unfocused (see question_words_held).

A capsule of the user's words goes out without its sentences that hold none of
the question's words, and without the reply: a fact told inside a longer turn
("Quick update: the meeting ran long... On Monday the blue recycling bin goes
out at 8:20. Anyway, I still need to pack...") drew "I'm sorry for the
confusion, but as a chatbot..." or talk of the meeting. On dev requests built
by benchmarks/focused_replies.py (4 seeds, 0.2), facts inside the three longer
turns were named in 287 of 336 replies whole and 316 of 336 cut (at 0, one
reply each: 78 and 83 of 84).

What the conversation still says about the question is not cut away: when a
user message still in the working set holds enough of the question's search
words to answer it as a capsule would ("My flight to Lisbon now leaves from
gate F12"), the question goes out with the whole working set, where that
message sits beside the evidence (a message that only asks a question, with
no number in it, tells nothing and does not count). A question of one search
word ("And the south one?"), or of stop words only ("What was it again?"),
leans on what came before and is never focused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from newt.memory.types import COMPACTION_MARKER, MemMessage
from newt.recall.excerpt import sentences
from newt.recall.fts_query import STOP_WORDS, query_terms
from newt.recall.near_misses import words_held
from newt.recall.retention import REPLY_MARK, USER_MARK, EvidenceCapsule, RetentionReport

# A question longer than this is a request with context of its own.
MAX_QUESTION_WORDS = 25
# A question of fewer search words leans on the conversation for its meaning.
MIN_QUESTION_TERMS = 2
# Question words naming the form of the value asked for, held by a value of
# that form (see question_words_held). A clock time: 2:50, 9.30, 7 pm, 7am.
_CLOCK = re.compile(r"\b\d{1,2}(?:[:.]\d{2}\b|\s?[ap]\.?m\b)", re.IGNORECASE)
VALUE_WORDS: dict[str, re.Pattern[str]] = {"time": _CLOCK, "hour": _CLOCK}


def answered_by_evidence(
    text: str, report: RetentionReport | None, said: Iterable[str] = ()
) -> bool:
    """A short, single question that one capsule answers (holds its search
    words, one short at most: see `enough_words`) and no message in `said`
    (the user's messages still in the working set) speaks to as fully."""
    return focus_evidence(text, report, said) is not None


def focus_evidence(
    text: str, report: RetentionReport | None, said: Iterable[str] = ()
) -> RetentionReport | None:
    """The evidence a focused question goes out with: only the capsules that
    answer it (see answered_by_evidence); None when it is not focused.

    The others are left out of that request: beside "The safe in the east
    office opens with 2058." a small model answered "The safe code in the east
    office is 1613." from "The garage door keypad code is 1613.", which holds
    only the word "code" of the question (see docs/design.md section 7)."""
    if report is None or not report.capsules:
        return None
    terms = question_terms(text)
    if terms is None:
        return None
    held = [len(question_words_held(c.excerpt, terms)) for c in report.capsules]
    enough = enough_words(len(terms))
    if max(held) < enough:
        return None
    # a message of the user's speaks to the question as a capsule would
    if any(len(question_words_held(m, terms)) >= enough for m in said if not _only_asks(m)):
        return None
    kept = [
        answering_part(c, terms) for c, n in zip(report.capsules, held, strict=True) if n >= enough
    ]
    return replace(
        report,
        capsules=kept,
        retained_tokens=sum(c.tokens for c in kept),
        dropped=report.dropped + len(report.capsules) - len(kept),
    )


def question_terms(text: str) -> set[str] | None:
    """The search words of a short, single question (one line ending in "?",
    at most MAX_QUESTION_WORDS words, MIN_QUESTION_TERMS search words or more);
    None for any other message."""
    question = text.strip()
    if not question.endswith("?") or "\n" in question:
        return None
    if len(question.split()) > MAX_QUESTION_WORDS:
        return None
    # only stop words ("What was it again?") is a question about what came before
    terms = {t.lower() for t in query_terms(question)} - STOP_WORDS
    return terms if len(terms) >= MIN_QUESTION_TERMS else None


def answering_part(capsule: EvidenceCapsule, terms: set[str]) -> EvidenceCapsule:
    """A capsule of the user's words without the sentences that hold none of
    the question's words (and without the reply): the fact told inside a
    longer turn, with what it needs around it. Sentences holding only one
    word stay ("The amber harbor has lockers. Mine opens with code 4417.")."""
    if capsule.speaker != "user" or not capsule.excerpt.startswith(USER_MARK):
        return capsule
    said = capsule.excerpt.partition(REPLY_MARK)[0].removeprefix(USER_MARK)
    starts, ends = sentences(said)
    parts = [said[a:b].strip() for a, b in zip(starts, ends, strict=True)]
    kept = [p for p in parts if p and question_words_held(p, terms)]
    excerpt = USER_MARK + " ".join(kept)
    if not kept or excerpt == capsule.excerpt:
        return capsule
    # the excerpt starts with USER_MARK, so its length is never 0
    tokens = max(1, capsule.tokens * len(excerpt) // len(capsule.excerpt))
    return replace(capsule, excerpt=excerpt, tokens=tokens)


def question_words_held(text: str, terms: set[str]) -> frozenset[str]:
    """The question's search words `text` holds: as words (see words_held), or,
    for a word naming the kind of value asked for, as a value of that kind.

    People tell a time without the word "time" ("On Saturday I have piano at
    2:50.") and ask "What time is my piano lesson on Saturday?", two words
    away from what they said; "time" is held by the clock time itself. Only
    words that name a value's form count (VALUE_WORDS): "code" does not, since
    a sibling's statement ("The safe in the west office opens with 5094.")
    holds digits too and would then answer for the east office's safe."""
    held = set(words_held(text, terms))
    for word in terms - held:
        form = VALUE_WORDS.get(word)
        if form is not None and form.search(text):
            held.add(word)
    return frozenset(held)


def _only_asks(message: str) -> bool:
    """A message that is one question and nothing else tells nothing: the same
    question asked again earlier must not keep this one beside the first
    (possibly wrong) answer. One that carries a number ("Is my locker code
    8080 now?") may be telling one, and counts."""
    text = message.strip()
    if not text.endswith("?") or "\n" in text or re.search(r"\d", text):
        return False
    return not re.search(r"[.!?]\s", text)


def enough_words(terms: int) -> int:
    """How many of a question's search words a capsule must hold to answer it:
    all but one, and at least MIN_QUESTION_TERMS. People ask with other words
    than they told ("What time is my dentist appointment?" for "My dentist
    appointment is at 9:30 tomorrow"; "favourite" for "likes most"); one
    word is the usual gap. A capsule short of more is about something else."""
    return max(MIN_QUESTION_TERMS, terms - 1)


def users_words(messages: Sequence[MemMessage]) -> list[str]:
    """The user's messages of a request's history (not the compaction record,
    not the new message)."""
    return [
        m.content
        for m in messages[:-1]
        if m.role == "user" and not m.content.startswith(COMPACTION_MARKER)
    ]


def focused(messages: Sequence[MemMessage]) -> list[MemMessage]:
    """The request's messages with the history left out: the leading system
    messages and the new message (the last one)."""
    head = 0
    while head < len(messages) - 1 and messages[head].role == "system":
        head += 1
    return [*messages[:head], *messages[-1:]]


def focus_sampling(options: dict[str, Any], temperature: float) -> dict[str, Any]:
    """A focused question's request options: the conversation's own temperature
    if it set one, else `temperature` (negative: the server's default)."""
    if "temperature" in options or temperature < 0:
        return options
    return {**options, "temperature": temperature}
