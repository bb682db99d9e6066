"""benchmarks/focused_replies.py: the cases it builds and the request newt
would send for each (no model: the requests are built by newt's own code)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import focused_replies as bench
from newt.recall.presentation import FOCUSED_HEADER


def test_every_phrasing_is_told_plainly_with_a_lead_in_and_inside_each_longer_turn() -> None:
    cases = [c for c in bench.cases("dev") if c.fact_id == "locker_amber"]
    wrappers = ["plain", "lead-in", "carrier1", "carrier2", "carrier3"]
    assert [c.wrapper for c in cases[:5]] == wrappers
    assert len(cases) == 10  # two phrasings
    plain, lead_in, carrier = cases[0], cases[1], cases[2]
    assert plain.value in plain.told and lead_in.told.endswith(plain.told)
    assert plain.told in carrier.told and len(carrier.told) > 2 * len(plain.told)


def test_the_request_is_the_focused_one_with_the_fact_cut_out_of_a_longer_turn() -> None:
    carrier = next(c for c in bench.cases("dev") if c.wrapper == "carrier2")
    messages = bench.request(carrier, "as_built")
    assert messages is not None and [m["role"] for m in messages] == ["system", "user"]
    content = messages[1]["content"]
    statement = carrier.told.split(". ")[1]  # the fact, second sentence of the carrier
    assert content == f"{FOCUSED_HEADER}\n- {statement}.\n\n{carrier.question}"
    whole = bench.request(carrier, "whole")
    assert whole is not None and carrier.told in whole[1]["content"]
    with pytest.raises(ValueError, match="unknown variant"):
        bench.request(carrier, "louder")


def test_a_question_focus_would_not_take_is_reported_not_sent() -> None:
    case = next(iter(bench.cases("dev")))
    unrelated = bench.Case(case.fact_id, case.kind, "plain", case.told, "What about soup?", "x")
    assert bench.request(unrelated, "as_built") is None
