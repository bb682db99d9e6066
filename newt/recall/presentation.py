"""The evidence block: what recall packs into a request, and how it reads.

`pack_block` is the one packing pass: candidates best first (by score,
recoverability breaking ties; by recoverability alone when there are no
scores), each statement only with its newer one, counted as the block will
be rendered, in the units the request is counted in, until the budget is
full. The block then reads oldest first, under a line for each day a line
was said ("Said on Monday 8 May 2023:", "Said yesterday:": the day it was
said, not the day of what it tells), each line saying who said it in a
word, its relative times ("yesterday", "last week") anchored to that day in
brackets (recall/time_anchor.py), under a header that says where the lines
come from and, when every recalled message is older than the conversation
the request carries, that the messages above are newer. So when two
statements of the same thing disagree, the newest is the last one read and
sits under the latest day, whatever model reads it. The lines sit between
<recalled> and </recalled>, so the user's message after them is not read as
one more recalled line (small models answered the last line recalled, or a
line beside the question, instead of the question); a recalled line that
holds those tags has them turned into look-alikes, so no line ends the
fence early.

Bookkeeping is said once, in the header, and never beside a capsule: a line
cut short ends in "…", and the header says (when the model is offered
fetch_record) that the line's first words fetch it whole. Keys and lists of
keys beside the evidence were copied into replies by small models.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime

from newt.recall.fts_query import query_terms
from newt.recall.retention import (
    DEFAULT_EXCERPT_TOKENS,
    EvidenceCapsule,
    RetentionCandidate,
    RetentionReport,
    chain,
    est_tokens,
    recoverability,
    to_capsule,
)
from newt.recall.time_anchor import anchor_times

EVIDENCE_HEADER = (
    "{source} (oldest first, under the day each was said; today is {today}){newer}:{cut}"
)
# Where the lines come from, by the conversations they were said in.
FROM_HERE = "Recalled from earlier in this conversation"
FROM_OTHERS = "Recalled from our other conversations"
FROM_BOTH = "Recalled from earlier in this conversation and from others"
# Said when every capsule is older than the oldest message of the conversation
# the request carries: then a later statement there wins over a recalled one.
NEWER_ABOVE = "; the messages above are newer than all of these"
# Said once, when a line is cut short and the model can fetch it whole.
CUT_NOTE = " (a line ending in … is cut short: fetch_record with its first words gives it whole)"
CUT_MARK = "…"
# The lines sit between these, the header above them, the message after them.
OPEN_LINES = "<recalled>"
CLOSE_LINES = "</recalled>"
# A tag of the fence inside a recalled line, and what it is shown as there.
_FENCE_TAG = re.compile(r"<(/?)(recalled)>", re.IGNORECASE)
_LOOK_ALIKE = "\u2039\\1\\2\u203a"
# The shortest excerpt worth a line: the packing stops below it.
MIN_EXCERPT_CHARS = 16

# Who said it, in a word: every token of the block is one less for evidence.
_WHO = {"user": "user", "assistant": "you", "tool": "tool"}
_KIND = {"note": "your note", "compaction": "summary"}


def chronological(capsules: Sequence[EvidenceCapsule]) -> list[EvidenceCapsule]:
    """Oldest first; within one turn the user's message before the reply."""
    role_order = {"user": 0, "assistant": 1, "tool": 2}
    return sorted(
        capsules, key=lambda c: (c.said_at, _turn_of(c.retrieval_key), role_order.get(c.role, 3))
    )


def _turn_of(key: str) -> int:
    digits = key[1:].split(".", 1)[0]
    return int(digits) if digits.isdigit() else 0


def when(said_at: float, now: float) -> str:
    """The day a thing was said, as a person would put it: "today",
    "yesterday", "on Monday 8 May 2023" (the weekday lets "last Friday" be read)."""
    if said_at <= 0:
        return "earlier"
    day = datetime.fromtimestamp(said_at).date()
    today = datetime.fromtimestamp(now).date()
    gap = (today - day).days
    if gap == 0:
        return "today"
    if gap == 1:
        return "yesterday"
    return "on " + _day(day)


def _day(day: date) -> str:
    return f"{day:%A} {day.day} {day:%B %Y}"


def _who(capsule: EvidenceCapsule) -> str:
    return _WHO.get(capsule.role) or _KIND.get(capsule.kind, "recorded")


@dataclass(frozen=True)
class Packing:
    """How the block will be counted and read."""

    count: Callable[[str], int] = est_tokens
    """Tokens a piece of the request's text costs (the session's estimate)."""
    fetchable: bool = False
    """The model is offered fetch_record: say once how to get a cut line whole."""
    now: float | None = None
    history_since: float | None = None
    """When the oldest message the request carries was said (None: it carries none)."""
    conversation_id: str = ""
    """The conversation the request belongs to (the header says where lines come from)."""


def evidence_block(report: RetentionReport | None, packing: Packing | None = None) -> str:
    """The capsules as text placed before the user's message in this request only."""
    if report is None or not report.capsules:
        return ""
    packing = packing or Packing()
    now = time.time() if packing.now is None else packing.now
    shown = chronological(report.capsules)
    said = [c for c in shown if c.role]  # messages; a note or summary has no one moment
    since = packing.history_since
    older = since is not None and all(c.said_at < since for c in said)
    cut = packing.fetchable and any(not c.whole for c in shown)
    lines = [_header(now, _source(shown, packing.conversation_id), older, cut), OPEN_LINES]
    day = None
    for capsule in shown:
        said_on = when(capsule.said_at, now)
        if said_on != day:
            day = said_on
            lines.append(_day_line(said_on))
        lines.append(_line(capsule))
    lines.append(CLOSE_LINES)
    return "\n".join(lines) + "\n\n"


def _source(capsules: Sequence[EvidenceCapsule], here: str) -> str:
    conversations = {c.conversation_id for c in capsules if c.conversation_id}
    if not here or here not in conversations:
        return FROM_OTHERS if conversations or not here else FROM_HERE
    return FROM_HERE if conversations == {here} else FROM_BOTH


def _header(now: float, source: str, older: bool, cut: bool) -> str:
    today = _day(datetime.fromtimestamp(now).date())
    return EVIDENCE_HEADER.format(
        source=source, today=today, newer=NEWER_ABOVE if older else "", cut=CUT_NOTE if cut else ""
    )


def _day_line(said_on: str) -> str:
    return f"Said {said_on}:"


def _line(capsule: EvidenceCapsule) -> str:
    text = _FENCE_TAG.sub(_LOOK_ALIKE, capsule.excerpt.strip())
    if capsule.role:  # a message: its "yesterday" is the day before it was said
        text = anchor_times(text, capsule.said_at)
    if not capsule.whole and not text.endswith(CUT_MARK):
        text += CUT_MARK
    return f"- {_who(capsule)}: {text}"


def _capsule(
    candidate: RetentionCandidate,
    excerpt_tokens: int,
    terms: frozenset[str],
    count: Callable[[str], int],
) -> tuple[EvidenceCapsule, str] | None:
    """The candidate's capsule and its line, counted as the request counts it."""
    capsule = to_capsule(candidate, excerpt_tokens, terms)
    if capsule is None:
        return None
    line = _line(capsule)
    capsule.tokens = count(line + "\n")
    return capsule, line


def pack_block(
    candidates: Sequence[RetentionCandidate],
    budget_tokens: int,
    packing: Packing | None = None,
    *,
    query: str = "",
    excerpt_tokens: int = DEFAULT_EXCERPT_TOKENS,
) -> tuple[RetentionReport, str]:
    """The capsules that fit `budget_tokens` as the block renders them, and
    the block: the one packing pass.

    Best first: by retrieval score, recoverability (recency x hit rate)
    breaking ties, so candidates without scores go by recoverability alone;
    then input order. A capsule is taken only if the block with it still
    fits (its line, its day's line when that day is new, the header at its
    longest): one that does not fit is skipped, so a shorter one after it
    may. A candidate whose newer statement (`newer`) is offered goes only
    with it, and with that one's, and so on: all, or none. A line the block
    already holds is not shown again, but said when its newest copy was.
    The block's own count never exceeds the budget (`retained_tokens` is it)."""
    packing = packing or Packing()
    now = time.time() if packing.now is None else packing.now
    budget = max(budget_tokens, 0)
    count = packing.count
    terms = frozenset(query_terms(query)) if query else frozenset()
    made: dict[str, tuple[EvidenceCapsule, str] | None] = {}

    def capsule_of(candidate: RetentionCandidate) -> tuple[EvidenceCapsule, str] | None:
        # built when first considered: most candidates never are once the
        # budget is full
        if candidate.id not in made:
            made[candidate.id] = _capsule(candidate, excerpt_tokens, terms, count)
        return made[candidate.id]

    order = sorted(
        range(len(candidates)),
        key=lambda i: (
            -_finite(candidates[i].retrieval_score),
            -recoverability(candidates[i].age_hours, candidates[i].access_count),
            i,
        ),
    )
    offered = {c.id: c for c in candidates}
    longest = max((FROM_HERE, FROM_OTHERS, FROM_BOTH), key=len)
    frame = f"\n{OPEN_LINES}\n{CLOSE_LINES}\n\n"
    used = count(_header(now, longest, True, packing.fetchable) + frame)
    # no line is cheaper than this: below it, packing is over
    least = count(_line(EvidenceCapsule("", "", "x" * MIN_EXCERPT_CHARS, 0, 0.0, role="user")))
    days: Counter[str] = Counter()  # kept capsules a day
    kept: list[EvidenceCapsule] = []
    taken: set[str] = set()
    shown: dict[str, EvidenceCapsule] = {}  # kept capsules by their line
    for i in order:
        if budget - used < least:
            break
        first = candidates[i]
        if first.id in taken:
            continue
        group = chain(first, lambda c: offered.get(c.newer), lambda c: c.id in taken)
        built = [capsule_of(c) for c in group]
        if built[0] is None:
            continue  # nothing to show of it
        adding, replaced = _unshown(built, shown)
        capsules = [capsule for capsule, _ in adding]
        if not capsules:
            taken.update(c.id for c in group)
            continue
        after = days.copy()
        after.subtract(when(c.said_at, now) for c in replaced)
        after.update(when(c.said_at, now) for c in capsules)
        cost = sum(c.tokens for c in capsules) - sum(c.tokens for c in replaced)
        cost += sum(count(_day_line(d) + "\n") for d in after if after[d] > 0 >= days[d])
        cost -= sum(count(_day_line(d) + "\n") for d in days if days[d] > 0 >= after[d])
        if used + cost > budget:
            continue
        used += cost
        days = after
        kept = [c for c in kept if all(c is not r for r in replaced)] + capsules
        shown.update((line, capsule) for capsule, line in adding)
        taken.update(c.id for c in group)
    report = RetentionReport(budget, 0, kept, len(candidates), len(candidates) - len(kept))
    text = evidence_block(report, Packing(count, packing.fetchable, now, packing.history_since,
                                          packing.conversation_id))  # fmt: skip
    report.retained_tokens = count(text) if text else 0
    return report, text


def _unshown(
    built: Sequence[tuple[EvidenceCapsule, str] | None], shown: dict[str, EvidenceCapsule]
) -> tuple[list[tuple[EvidenceCapsule, str]], list[EvidenceCapsule]]:
    """Of a group's capsules, those whose line the block does not hold yet,
    and the kept capsules they replace. A line the block holds says nothing
    new (a draft pasted twice, a reply repeated word for word), so it is
    shown once, said when its newest copy was: the newest statement stays
    the last one read."""
    fresh: dict[str, EvidenceCapsule] = {}
    for made in built:
        if made is not None:
            capsule, line = made
            if line not in fresh or fresh[line].said_at <= capsule.said_at:
                fresh[line] = capsule
    adding, replaced = [], []
    for line, capsule in fresh.items():
        twin = shown.get(line)
        if twin is None:
            adding.append((capsule, line))
        elif twin.said_at < capsule.said_at:
            adding.append((capsule, line))
            replaced.append(twin)
    return adding, replaced


def _finite(value: float) -> float:
    # A NaN would make the sort order depend on where it sits; rank it last.
    return float("-inf") if value != value else value
