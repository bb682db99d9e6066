"""How retained evidence reads in the request: oldest first, by day, each line attributed.

`retain_within_budget` decides WHAT fits (best match first); this module
decides how the model reads it. The capsules go in the order they were said,
under a line for each day ("On Monday 8 May 2023:", "Yesterday:"), each
saying who said it, under a header that says when they are older than the
conversation the request carries. So when two statements of the same thing
disagree, the newest is the last one read and sits under the latest day,
whatever model reads it; and a neighbouring turn recalled beside a hit sits
right next to it. One line per day rather than a date on every capsule: on
real conversations the dates had cost a quarter of the evidence budget.

The record keys go on one closing line, for `fetch_record`, and only when the
model has that tool. `fit_block` makes the block as rendered fit its budget.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import date, datetime

from newt.recall.retention import EvidenceCapsule, RetentionReport, est_tokens

EVIDENCE_HEADER = (
    "Recalled from earlier conversations with the user (verbatim, oldest first, under the"
    " day each was said; today is {today}){newer}:"
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


def _capitalized(day: str) -> str:
    # upper-case the first letter only: str.capitalize() would lower "Monday" and "May"
    return day[:1].upper() + day[1:]


def _who(capsule: EvidenceCapsule) -> str:
    return _WHO.get(capsule.role) or _KIND.get(capsule.kind, "recorded")


def capsule_text(capsule: EvidenceCapsule, now: float | None = None) -> str:
    """One capsule as a line that says when and who (the excerpt stays verbatim)."""
    now = time.time() if now is None else now
    day = when(capsule.said_at, now)
    return f"{_capitalized(day)}, {_who(capsule)}: {capsule.excerpt.strip()}"


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
    day = None
    for capsule in shown:
        said_on = when(capsule.said_at, now)
        if said_on != day:
            day = said_on
            lines.append(f"{_capitalized(said_on)}:")
        lines.append(f"- {_who(capsule)}: {capsule.excerpt.strip()}")
    if keys:
        lines.append(KEYS_LINE.format(keys=", ".join(c.retrieval_key for c in shown)))
    return "\n".join(lines) + "\n\n"


def fit_block(
    report: RetentionReport | None,
    budget_tokens: int,
    *,
    keys: bool = True,
    now: float | None = None,
    history_since: float | None = None,
) -> tuple[RetentionReport | None, str]:
    """The report and its block, the block as rendered within `budget_tokens`:
    the lowest-scored capsules go first until it fits (packing counts the
    excerpts and a per-capsule estimate; the day lines, the header and the
    keys line are known only here)."""
    if report is None:
        return None, ""
    capsules = list(report.capsules)

    def render(kept: list[EvidenceCapsule]) -> str:
        shown = replace(report, capsules=kept)
        return evidence_block(shown, keys=keys, now=now, history_since=history_since)

    text = render(capsules)
    while capsules and est_tokens(text) > budget_tokens:
        worst = min(range(len(capsules)), key=lambda i: (capsules[i].retrieval_score, -i))
        del capsules[worst]
        text = render(capsules)
    if len(capsules) == len(report.capsules):
        return report, text
    dropped = len(report.capsules) - len(capsules)
    fitted = replace(
        report,
        capsules=capsules,
        retained_tokens=sum(c.tokens for c in capsules),
        dropped=report.dropped + dropped,
    )
    return fitted, text
