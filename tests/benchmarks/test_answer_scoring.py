"""benchmarks/locomo_answers.py scores a reply as LoCoMo does, and counts a
date the same whichever way round it is written."""

from __future__ import annotations

import sys

from tests.support.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import locomo_answers as bench


def test_a_date_is_held_whichever_way_round_it_is_written() -> None:
    assert bench.holds_gold("Yesterday, Saturday 3 September 2022.", "September 3, 2022")
    assert bench.holds_gold(
        "The trip was on the weekend before 24 October 2023.",
        "the weekend before October 24, 2023",
    )
    assert bench.holds_gold("On July 11th, 2022.", "11 July 2022")
    # another day is another answer
    assert not bench.holds_gold("Sunday 10 July 2022", "July 11, 2022")


def test_the_gold_must_be_held_whole() -> None:
    assert bench.holds_gold("John scored 40 points.", "40 points")
    assert not bench.holds_gold("40", "40 points")
    assert bench.f1("40", "40 points") == 2 / 3
