"""Excerpt windows and the words a long message's excerpts focus on."""

from __future__ import annotations

from newt.recall.excerpt import focus_terms, select_excerpt


def test_focus_terms_are_the_words_of_the_sentences_with_a_rare_word() -> None:
    message = (
        "I spent the morning on the quarterly report and the printer jammed twice. "
        "Anyway: how many nodes are in the Fenfalcal cluster? Thanks, the team says hi."
    )
    expected = ["anyway", "many", "nodes", "fenfalcal", "cluster"]  # ":" ends no sentence
    assert focus_terms(message, ["fenfalcal"]) == expected


def test_focus_terms_fall_back_to_the_rare_words() -> None:
    assert focus_terms("nothing relevant here", ["zeta"]) == ["zeta"]


def test_the_mention_with_the_question_words_wins() -> None:
    filler = "The weekly sync ran long and nobody took notes about the plan. " * 3
    decoy = "Fenfalcal came up again when we discussed the printer. "
    fact = "The Fenfalcal cluster runs on 224 nodes in the central region."
    content = filler + decoy + filler + fact + " " + filler
    excerpt = select_excerpt(content, 200, ["nodes", "fenfalcal", "cluster"])
    assert fact in excerpt and decoy.strip() not in excerpt


def test_window_ends_on_a_sentence_boundary() -> None:
    content = "Alpha one. " * 10 + "The needle is here. Then more words follow on and on. " * 3
    excerpt = select_excerpt(content, 60, ["needle"])
    assert excerpt.startswith("The needle is here.")
    assert excerpt.endswith(".") and len(excerpt) <= 60 and excerpt in content
