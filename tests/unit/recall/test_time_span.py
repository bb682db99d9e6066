"""The days a query names, read as spans of local time (recall/time_span.py)."""

from __future__ import annotations

from datetime import datetime

from newt.recall.time_span import MARGIN_S, TOLD_AFTER_S, time_spans

# Thursday 3 December 2026, noon local time
NOW = datetime(2026, 12, 3, 12, 0).timestamp()


def day_start(y: int, m: int, d: int) -> float:
    return datetime(y, m, d).timestamp() - MARGIN_S


def only_span(text: str) -> tuple[float, float, str]:
    spans, rest = time_spans(text, NOW)
    assert len(spans) == 1, (text, spans)
    return spans[0].start, spans[0].end, rest


def test_a_named_day_in_any_common_spelling() -> None:
    for text in (
        "What did Maria do on 31 July, 2023?",
        "What did Maria do on July 31, 2023?",
        "What did Maria do on 31st of July 2023?",
        "What did Maria do on Jul. 31 2023?",
        "What did Maria do on 2023-07-31?",
    ):
        start, end, rest = only_span(text)
        assert start == day_start(2023, 7, 31), text
        assert end == day_start(2023, 8, 1) + 2 * MARGIN_S + TOLD_AFTER_S, text
        assert rest == "What did Maria do on ?", text


def test_a_named_month_spans_the_month() -> None:
    start, end, rest = only_span("Which city did John recommend in January 2024?")
    assert start == day_start(2024, 1, 1)
    assert end == day_start(2024, 2, 1) + 2 * MARGIN_S + TOLD_AFTER_S
    assert "January" not in rest and "2024" not in rest
    start, _, _ = only_span("plans for December 2026")
    assert start == day_start(2026, 12, 1)


def test_a_day_without_a_year_is_the_latest_one_not_after_today() -> None:
    assert only_span("what did I say on 2 December")[0] == day_start(2026, 12, 2)
    assert only_span("what did I say on the 25th of December")[0] == day_start(2025, 12, 25)


def test_relative_days_count_from_now() -> None:
    assert only_span("what did I tell you yesterday about the cat")[0] == day_start(2026, 12, 2)
    assert only_span("what did we plan today")[0] == day_start(2026, 12, 3)
    assert only_span("what did we do last Friday")[0] == day_start(2026, 11, 27)
    assert only_span("what did we do on Thursday")[0] == day_start(2026, 11, 26)  # a week ago
    start, end, _ = only_span("the thing from last week")
    assert start == day_start(2026, 11, 23)
    assert end == day_start(2026, 11, 30) + 2 * MARGIN_S + TOLD_AFTER_S
    assert only_span("the thing from last month")[0] == day_start(2026, 11, 1)
    start, end, _ = only_span("what I said 3 days ago")
    assert start <= day_start(2026, 11, 30) + MARGIN_S < end


def test_words_that_only_look_like_times_are_left_alone() -> None:
    for text in (
        "May I ask what the depot code is?",
        "I think 5 may be enough",
        "we met on the march to the sea",
        "room 2023 is on the left",
        "Monday is my favourite day",
    ):
        spans, rest = time_spans(text, NOW)
        assert spans == [] and rest == text, text


def test_a_weekday_beside_a_date_is_not_read_as_last_week() -> None:
    spans, _ = time_spans("What did they plan for the Saturday after October 28, 2023?", NOW)
    assert len(spans) == 1 and spans[0].start == day_start(2023, 10, 28)
