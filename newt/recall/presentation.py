"""How retained evidence reads in the request: oldest first, by day, each line attributed.

`retain_within_budget` decides WHAT fits (best match first); this module
decides how the model reads it. The capsules go in the order they were said,
under a line for each day ("On Monday 8 May 2023:", "Yesterday:"), each
saying who said it, under a header that says when they are older than the
conversation the request carries. So when two statements of the same thing
disagree, the newest is the last one read and sits under the latest day,
whatever model reads it; and a neighbouring turn recalled beside a hit sits
right next to it. One line per day rather than a date on every capsule:
a date per line costs evidence room (design.md section 7).

The keys of the capsules cut short go on one closing line, for
`fetch_record`, and only when the model has that tool (a whole record has
nothing more to fetch). Every word of the block besides the excerpts is one
less for evidence, so who said it is a word ("user", "you"). `fit_block`
packs the block as rendered into its budget.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import date, datetime

from newt.recall.retention import CHARS_PER_TOKEN, EvidenceCapsule, RetentionReport, chain

EVIDENCE_HEADER = (
    "Recalled from earlier conversations (verbatim, oldest first, by the day said;"
    " today is {today}){newer}:"
)
# Said when every capsule is older than the oldest message of the conversation
# the request carries: then a later statement there wins over a recalled one.
NEWER_ABOVE = "; the messages above are newer than all of these"
KEYS_LINE = "Cut short, in full with fetch_record: {keys}."

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


def _capitalized(day: str) -> str:
    # upper-case the first letter only: str.capitalize() would lower "Monday" and "May"
    return day[:1].upper() + day[1:]


def _who(capsule: EvidenceCapsule) -> str:
    return _WHO.get(capsule.role) or _KIND.get(capsule.kind, "recorded")


def evidence_block(
    report: RetentionReport | None,
    *,
    keys: bool = True,
    now: float | None = None,
    history_since: float | None = None,
) -> str:
    """The capsules as text placed before the user's message in this request only.

    `keys`: name the keys of the capsules cut short, for fetch_record (only
    useful when the model is offered that tool; a whole record has nothing
    more to fetch); `history_since`: when the oldest message the request
    carries was said (None: it carries none)."""
    if report is None or not report.capsules:
        return ""
    now = time.time() if now is None else now
    shown = chronological(report.capsules)
    said = [c for c in shown if c.role]  # messages; a note or summary has no one moment
    older = history_since is not None and all(c.said_at < history_since for c in said)
    lines = [_header(now, older)]
    day = None
    for capsule in shown:
        said_on = when(capsule.said_at, now)
        if said_on != day:
            day = said_on
            lines.append(_day_line(said_on))
        lines.append(_line(capsule))
    cut = [c.retrieval_key for c in shown if not c.whole]
    if keys and cut:
        lines.append(KEYS_LINE.format(keys=", ".join(cut)))
    return "\n".join(lines) + "\n\n"


def _header(now: float, older: bool) -> str:
    today = _day(datetime.fromtimestamp(now).date())
    return EVIDENCE_HEADER.format(today=today, newer=NEWER_ABOVE if older else "")


def _day_line(said_on: str) -> str:
    return f"{_capitalized(said_on)}:"


def _line(capsule: EvidenceCapsule) -> str:
    return f"- {_who(capsule)}: {capsule.excerpt.strip()}"


def fit_block(
    report: RetentionReport | None,
    budget_tokens: int,
    *,
    keys: bool = True,
    now: float | None = None,
    history_since: float | None = None,
) -> tuple[RetentionReport | None, str]:
    """The report and its block, the block as rendered within `budget_tokens`.

    Capsules are taken best score first, each only if the block with it still
    fits (its line, its day's line if that day is new, its key if cut short);
    one that does not fit is skipped, so a shorter one after it may. The
    report may offer more than fits: its packing knows neither the header nor
    which capsules share a day, so it is asked for more and this decides.
    A capsule whose newer statement (`newer`) is offered goes only with it:
    both, or neither, so a superseded value never comes alone."""
    if report is None:
        return None, ""
    now = time.time() if now is None else now
    order = sorted(
        range(len(report.capsules)), key=lambda i: (-report.capsules[i].retrieval_score, i)
    )
    limit = budget_tokens * CHARS_PER_TOKEN
    # the header at its longest and the blank line at the end
    used = len(_header(now, True)) + 2
    days: set[str] = set()
    keys_open = False
    kept: list[int] = []
    taken: set[int] = set()
    by_key = {c.retrieval_key: i for i, c in enumerate(report.capsules)}
    for i in order:
        if i in taken:
            continue
        # a statement goes only with its newer one, and so on
        group = chain(i, lambda j: by_key.get(report.capsules[j].newer), taken.__contains__)
        cost, group_days, group_keys = 0, set(days), keys_open
        for j in group:
            capsule = report.capsules[j]
            said_on = when(capsule.said_at, now)
            cost += len(_line(capsule)) + 1
            if said_on not in group_days:
                cost += len(_day_line(said_on)) + 1
                group_days.add(said_on)
            if keys and not capsule.whole:
                cost += len(capsule.retrieval_key) + 2
                if not group_keys:
                    cost += len(KEYS_LINE.format(keys="")) + 1
                group_keys = True
        if used + cost > limit:
            continue
        used += cost
        days, keys_open = group_days, group_keys
        kept += group
        taken.update(group)
    capsules = [report.capsules[i] for i in kept]
    fitted = replace(
        report,
        budget_tokens=budget_tokens,
        capsules=capsules,
        retained_tokens=sum(c.tokens for c in capsules),
        dropped=report.dropped + len(report.capsules) - len(capsules),
    )
    text = evidence_block(fitted, keys=keys, now=now, history_since=history_since)
    return fitted, text
