"""Relative times in a recalled line, anchored to the day it was said.

`anchor_times(text, said_at)` follows each relative time in a recalled
message ("yesterday", "last week", "two days ago", "last Friday", "next
month") with the time it meant, in brackets: "I went climbing yesterday
[Sunday 7 May 2023]". Why: a line read weeks later says "yesterday" about a
day long gone, and a model asked "when?" answers with the word, or with the
day the line was said, not with the day it names. The resolution is only
what the words and the day allow: "last week" is "the week before" that
day, never a date.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta

from newt.recall.time_span import WEEKDAYS

_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_N = r"(?P<n>\d{1,2}|a|an|one|two|three|four|five|six)"


def _day(day: date) -> str:
    return f"{day:%A} {day.day} {day:%B %Y}"


def _plain(day: date) -> str:
    return f"{day.day} {day:%B %Y}"


def _month(day: date) -> str:
    return f"{day:%B %Y}"


def _months_back(day: date, n: int) -> date:
    month = day.month - 1 - n
    return date(day.year + month // 12, month % 12 + 1, 1)


def _n(m: re.Match[str]) -> int:
    raw = m.group("n").lower()
    return _NUMBERS[raw] if raw in _NUMBERS else int(raw)


def _ago(m: re.Match[str], said: date) -> str:
    n, unit = _n(m), m.group("unit").lower()
    if unit == "day":
        return _day(said - timedelta(days=n))
    if unit == "week":
        return f"the week of {_plain(said - timedelta(weeks=n))}"
    if unit == "month":
        return _month(_months_back(said, n))
    return str(said.year - n)


def _weekday(m: re.Match[str], said: date) -> str:
    back = (said.weekday() - WEEKDAYS.index(m.group("weekday").lower())) % 7 or 7
    return _day(said - timedelta(days=back))


_Resolve = Callable[[re.Match[str], date], str]
_PATTERNS: list[tuple[re.Pattern[str], _Resolve]] = [
    (re.compile(r"\b(?:yesterday|last night)\b", re.I), lambda m, d: _day(d - timedelta(days=1))),
    (re.compile(r"\btomorrow\b", re.I), lambda m, d: _day(d + timedelta(days=1))),
    (
        re.compile(rf"\b{_N}\s+(?P<unit>day|week|month|year)s?\s+ago\b", re.I),
        _ago,
    ),
    (re.compile(r"\blast\s+weekend\b", re.I), lambda m, d: f"the weekend before {_plain(d)}"),
    (re.compile(r"\blast\s+week\b", re.I), lambda m, d: f"the week before {_plain(d)}"),
    (re.compile(r"\bnext\s+week\b", re.I), lambda m, d: f"the week after {_plain(d)}"),
    (re.compile(r"\blast\s+month\b", re.I), lambda m, d: _month(_months_back(d, 1))),
    (re.compile(r"\bnext\s+month\b", re.I), lambda m, d: _month(_months_back(d, -1))),
    (re.compile(r"\blast\s+year\b", re.I), lambda m, d: str(d.year - 1)),
    (re.compile(r"\bnext\s+year\b", re.I), lambda m, d: str(d.year + 1)),
    (
        re.compile(r"\blast\s+(?P<weekday>" + "|".join(WEEKDAYS) + r")\b", re.I),
        _weekday,
    ),
]


# What anchor_times adds, for a judge comparing a line with what was said.
ANCHOR = re.compile(
    r" \[(?:the (?:weekend|week) (?:before|after|of) )?"
    r"(?:(?:[A-Z][a-z]+day )?\d{1,2} [A-Z][a-z]+ \d{4}|[A-Z][a-z]+ \d{4}|\d{4})\]"
)


def without_anchors(text: str) -> str:
    """`text` with the brackets anchor_times added taken out."""
    return ANCHOR.sub("", text)


def anchor_times(text: str, said_at: float) -> str:
    """`text` with each relative time followed by what it meant on the day
    `said_at` (a timestamp; 0 or less: unknown, `text` unchanged)."""
    if said_at <= 0:
        return text
    said = datetime.fromtimestamp(said_at).date()
    for pattern, resolve in _PATTERNS:
        text = pattern.sub(_annotate(resolve, said), text)
    return text


def _annotate(resolve: _Resolve, said: date) -> Callable[[re.Match[str]], str]:
    return lambda m: f"{m.group()} [{resolve(m, said)}]"
