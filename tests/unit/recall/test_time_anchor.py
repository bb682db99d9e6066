"""A recalled line's relative times are anchored to the day it was said."""

from __future__ import annotations

from datetime import datetime

import pytest

from newt.recall import EvidenceCapsule, RetentionReport
from newt.recall.presentation import Packing, evidence_block
from newt.recall.time_anchor import anchor_times, without_anchors

MONDAY = datetime(2023, 5, 8, 14, 0).timestamp()  # said on Monday 8 May 2023
LATER = datetime(2023, 6, 20, 9, 0).timestamp()


@pytest.mark.parametrize(
    ("said", "anchored"),
    [
        ("I went climbing yesterday.", "I went climbing yesterday [Sunday 7 May 2023]."),
        ("We talked last night", "We talked last night [Sunday 7 May 2023]"),
        ("The exam is tomorrow", "The exam is tomorrow [Tuesday 9 May 2023]"),
        ("I moved two days ago", "I moved two days ago [Saturday 6 May 2023]"),
        ("It broke 3 weeks ago", "It broke 3 weeks ago [the week of 17 April 2023]"),
        ("Last weekend we hiked", "Last weekend [the weekend before 8 May 2023] we hiked"),
        ("I joined a gym last week", "I joined a gym last week [the week before 8 May 2023]"),
        ("We fly next week", "We fly next week [the week after 8 May 2023]"),
        ("He got sick last month", "He got sick last month [April 2023]"),
        ("She starts next month", "She starts next month [June 2023]"),
        ("I quit last year", "I quit last year [2022]"),
        ("We adopted her three years ago", "We adopted her three years ago [2020]"),
        ("Six months ago I started", "Six months ago [November 2022] I started"),
        ("I met her last Friday", "I met her last Friday [Friday 5 May 2023]"),
        ("Last Monday was odd", "Last Monday [Monday 1 May 2023] was odd"),
    ],
)
def test_a_relative_time_says_what_it_meant_that_day(said: str, anchored: str) -> None:
    assert anchor_times(said, MONDAY) == anchored
    assert without_anchors(anchored) == said  # what a judge compares with what was said


@pytest.mark.parametrize(
    "said",
    ["Weekend plans, anyone?", "I like last-minute trips", "See you on 8 May 2023", "today"],
)
def test_words_that_name_no_relative_time_are_left_alone(said: str) -> None:
    assert anchor_times(said, MONDAY) == said


def test_a_line_of_unknown_time_is_left_alone() -> None:
    assert anchor_times("I went climbing yesterday", 0.0) == "I went climbing yesterday"


def test_the_block_anchors_a_message_but_not_a_note_or_summary() -> None:
    said = EvidenceCapsule("t1", "t1", "I joined a gym last week", 8, 1.0, 1.0, "user", MONDAY)
    note = EvidenceCapsule("n1", "n1", "dentist tomorrow", 4, 1.0, 1.0, "", MONDAY, "note")
    block = evidence_block(RetentionReport(200, 12, [said, note]), Packing(now=LATER))
    assert "- user: I joined a gym last week [the week before 8 May 2023]" in block
    assert "- your note: dentist tomorrow\n" in block
