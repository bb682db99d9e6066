"""How retained evidence reads in the request: oldest first, each line dated and attributed.

`retain_within_budget` decides WHAT fits (best match first); this module
decides how the model reads it. The capsules go in the order they were said,
each with its day ("on 8 May 2023", "yesterday") and who said it, under a
header that says they are older than the conversation the request carries.
So when two statements of the same thing disagree, the newest is the last
one read and carries the latest date, whatever model reads it; and a
neighbouring turn recalled beside a hit sits right next to it.

The record keys go on one closing line, for `fetch_record`, and only when the
model has that tool.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import date, datetime

from newt.recall.retention import EvidenceCapsule, RetentionReport

EVIDENCE_HEADER = (
    "Recalled from earlier conversations with the user (verbatim, oldest first, each with"
    " the day it was said; today is {today}){newer}:"
)
# Said when every capsule is older than the oldest message of the conversation
# the request carries: then a later statement there wins over a recalled one.
NEWER_ABOVE = "; the messages above are more recent than all of these"
KEYS_LINE = "Full records, if needed: fetch_record with key {keys}."

_WHO = {"user": "the user said", "assistant": "you replied", "tool": "a tool returned"}
_KIND = {"note": "a note you saved", "compaction": "a summary of earlier turns"}


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


def capsule_text(capsule: EvidenceCapsule, now: float | None = None) -> str:
    """One capsule as a line that says when and who (the excerpt stays verbatim)."""
    now = time.time() if now is None else now
    who = _WHO.get(capsule.role) or _KIND.get(capsule.kind, "recorded")
    text = capsule.excerpt.strip()
    day = when(capsule.said_at, now)
    # upper-case the first letter only: str.capitalize() would lower "Monday" and "May"
    return f"{day[:1].upper()}{day[1:]}, {who}: {text}"


def evidence_block(
    report: RetentionReport | None,
    *,
    keys: bool = True,
    now: float | None = None,
    history_since: float | None = None,
) -> str:
    """The capsules as text placed before the user's message in this request only.

    `keys`: name the records' keys for fetch_record (only useful when the
    model is offered that tool); `history_since`: when the oldest message the
    request carries was said (None: it carries none)."""
    if report is None or not report.capsules:
        return ""
    now = time.time() if now is None else now
    shown = chronological(report.capsules)
    said = [c for c in shown if c.role]  # messages; a note or summary has no one moment
    older = history_since is not None and all(c.said_at < history_since for c in said)
    today = _day(datetime.fromtimestamp(now).date())
    lines = [EVIDENCE_HEADER.format(today=today, newer=NEWER_ABOVE if older else "")]
    lines += [f"- {capsule_text(c, now)}" for c in shown]
    if keys:
        lines.append(KEYS_LINE.format(keys=", ".join(c.retrieval_key for c in shown)))
    return "\n".join(lines) + "\n\n"
