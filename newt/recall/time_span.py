"""The days a query names: "on 31 July, 2023", "in January 2024",
"yesterday", "last Friday", "2023-05-08" (docs/design.md section 7).

`time_spans(text, now)` returns each named time as a half-open span of
timestamps (local time, as the capsules' day lines are written) and the text
with those phrases taken out. Why: what was said on a day is found by when it
was said, which no word of the record holds. A month named without a year, a
bare number or a weekday beside a date is not read as a time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

MONTHS = {
    name: n
    for n, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# Slack on each side of a named day or month: a late-night message, a clock
# in another zone.
MARGIN_S = 6 * 3600.0
# Things are told after they happen ("I went hiking yesterday"): a named
# day or month also holds what was said this long after it.
TOLD_AFTER_S = 3 * 86400.0

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_PATTERNS = [
    ("day", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I)),
    ("day", re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I)),
    ("iso", re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)\b")),
    ("month", re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.I)),
    ("day", re.compile(rf"\b(?:on|the)\s+{_DAY}\s+(?:of\s+)?{_MONTH}\b", re.I)),
    ("yesterday", re.compile(r"\b(?:yesterday|last night)\b", re.I)),
    ("today", re.compile(r"\b(?:today|this morning|tonight)\b", re.I)),
    ("ago", re.compile(r"\b(?P<n>\d+|a|an|one|two|three)\s+(?P<unit>day|week)s?\s+ago\b", re.I)),
    ("last", re.compile(r"\blast\s+(?P<unit>week|month)\b", re.I)),
    ("weekday", re.compile(r"\b(?:on|last)\s+(?P<weekday>" + "|".join(WEEKDAYS) + r")\b", re.I)),
]
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}


@dataclass(frozen=True)
class TimeSpan:
    start: float
    end: float

    def holds(self, at: float) -> bool:
        return self.start <= at < self.end


def _day_span(day: date) -> TimeSpan:
    return _days_span(day, 1)


def _days_span(first: date, days: int) -> TimeSpan:
    start = datetime(first.year, first.month, first.day).timestamp()
    end = datetime.combine(first + timedelta(days=days), datetime.min.time()).timestamp()
    return TimeSpan(start - MARGIN_S, end + MARGIN_S + TOLD_AFTER_S)


def _month_span(year: int, month: int) -> TimeSpan:
    start = datetime(year, month, 1)
    nxt = datetime(year + month // 12, month % 12 + 1, 1)
    return TimeSpan(start.timestamp() - MARGIN_S, nxt.timestamp() + MARGIN_S + TOLD_AFTER_S)


def _span(kind: str, m: re.Match[str], today: date) -> TimeSpan | None:
    g = m.groupdict()
    if kind in ("day", "iso", "month"):
        month = int(g["month"]) if kind == "iso" else MONTHS[g["month"].lower()]
        year = int(g["year"]) if g.get("year") else None
        if kind == "month":
            return _month_span(year or today.year, month)
        if year is None:  # the latest such day not after today
            later = (month, int(g["day"])) > (today.month, today.day)
            year = today.year - 1 if later else today.year
        try:
            return _day_span(date(year, month, int(g["day"])))
        except ValueError:
            return None
    if kind == "yesterday":
        return _day_span(today - timedelta(days=1))
    if kind == "today":
        return _day_span(today)
    if kind == "ago":
        n = _NUMBERS.get(g["n"].lower()) or int(g["n"])
        days = n * (7 if g["unit"].lower() == "week" else 1)
        # "a week ago" is about then, give or take a day or two
        slack = 1 if days < 7 else 3
        return _days_span(today - timedelta(days=days + slack), 2 * slack + 1)
    if kind == "last":
        if g["unit"].lower() == "week":
            monday = today - timedelta(days=today.weekday())
            return _days_span(monday - timedelta(days=7), 7)
        first = today.replace(day=1) - timedelta(days=1)
        return _month_span(first.year, first.month)
    if kind == "weekday":
        back = (today.weekday() - WEEKDAYS.index(g["weekday"].lower())) % 7 or 7
        return _day_span(today - timedelta(days=back))
    return None


def time_spans(text: str, now: float) -> tuple[list[TimeSpan], str]:
    """The spans `text` names (in the order found) and `text` without them."""
    today = datetime.fromtimestamp(now).date()
    spans: list[TimeSpan] = []
    rest = text
    for kind, pattern in _PATTERNS:
        if kind == "weekday" and spans:
            break  # "the Saturday after 28 October" is not last Saturday
        found: list[TimeSpan] = []

        def cut(m: re.Match[str], kind: str = kind, found: list[TimeSpan] = found) -> str:
            span = _span(kind, m, today)
            if span is None:
                return m.group()
            found.append(span)
            return " "

        rest = pattern.sub(cut, rest)
        spans += found
    return spans, " ".join(rest.split())
