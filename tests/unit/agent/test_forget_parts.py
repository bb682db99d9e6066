"""Forgetting only the parts of a message that hold a phrase."""

from __future__ import annotations

from newt.agent.own_memory.forget_parts import cut, holds_more

FACTS = "My sister lives in Tromsø, I'm allergic to peanuts, my dog is called Pixel"


def test_a_clause_holding_the_phrase_goes_and_the_rest_stays() -> None:
    found = cut(FACTS, "peanuts")
    assert found is not None
    assert found.kept == "My sister lives in Tromsø, [forgotten], my dog is called Pixel"
    assert found.parts == ["I'm allergic to peanuts"]


def test_sentences_next_to_each_other_share_one_marker() -> None:
    found = cut("I like peanuts. Peanuts are great; really. The end.", "PEANUTS")
    assert found is not None
    assert found.kept == "[forgotten]; really. The end."
    assert found.parts == ["I like peanuts.", "Peanuts are great"]
    apart = cut("Peanuts first.\nThen tea.\nPeanuts again.", "peanuts")
    assert apart is not None and apart.kept == "[forgotten]\nThen tea.\n[forgotten]"


def test_a_message_that_is_all_match_or_split_by_it_goes_whole() -> None:
    assert cut("I'm allergic to peanuts!", "peanuts") is None  # every part holds it
    assert cut("Tromsø, peanuts", "Tromsø peanuts") is None  # across a comma
    assert cut(FACTS, "cashews") is None


def test_holds_more_says_whether_forgetting_it_takes_other_words() -> None:
    assert holds_more(FACTS, "peanuts")
    assert not holds_more("peanuts.", "peanuts")
    assert holds_more("Tromsø, peanuts", "Tromsø peanuts")
