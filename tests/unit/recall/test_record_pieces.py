"""recall/pieces.py: what a record is embedded as."""

from __future__ import annotations

from newt.recall.embedder import chunks
from newt.recall.pieces import MAX_PIECES, record_pieces

TOLD = (
    "Last thing: I've started learning the cello, and my teacher, Mrs. Okafor, wants"
    " me to practise scales daily. How long should a beginner practise?"
)


def test_a_users_statement_about_themselves_is_embedded_clause_by_clause_too() -> None:
    pieces = record_pieces(TOLD, "user")
    assert pieces[: len(chunks(TOLD))] == chunks(TOLD)  # the packed sentences first
    extra = pieces[len(chunks(TOLD)) :]
    assert "Last thing I've started learning the cello" in extra
    # "Mrs." ends no sentence; a short clause joins the next
    assert "my teacher Mrs. Okafor" in extra
    assert not any("beginner" in piece for piece in extra)  # the question is a request: not split


def test_only_the_users_own_statements_are_split() -> None:
    reply = "I think my advice is simple: practise ten minutes, and rest your hands."
    assert record_pieces(reply, "assistant") == chunks(reply)
    assert record_pieces(reply, None) == chunks(reply)  # notes and summaries
    told = "The weather was grey, and the bus was late again."  # nobody speaks of themselves
    assert record_pieces(told, "user") == chunks(told)


def test_pieces_stay_bounded_and_distinct() -> None:
    long = " ".join(f"I saw bird number {n}, and my list grew by one." for n in range(200))
    pieces = record_pieces(long, "user")
    assert len(pieces) == MAX_PIECES
    assert len(set(pieces)) == len(pieces)
    assert record_pieces("", "user") == []
    # a clause equal to its sentence comes once
    assert record_pieces("My cat.", "user") == ["My cat."]


def test_someone_of_the_users_named_in_passing_is_a_piece_of_its_own() -> None:
    told = (
        "Planning the week: my son Theo starts at a new nursery on Monday, so mornings are chaos."
    )
    assert "my son Theo" in record_pieces(told, "user")
    told = "Spring cleaning again: our parrot Kiwi keeps throwing seed husks across the room."
    assert "our parrot Kiwi" in record_pieces(told, "user")
    # the same person said twice (with and without a comma) is one piece
    told = "I rang my teacher, Mrs. Okafor, and my teacher Mrs. Okafor said yes."
    assert sum("Okafor" in p and len(p.split()) == 4 for p in record_pieces(told, "user")) == 1
    # no name, no piece of its own: "my mum's" tells nothing alone
    assert not any(
        p.startswith("My mum") and len(p.split()) < 4
        for p in record_pieces("My mum's birthday is on the 3rd of September.", "user")
    )


def test_what_the_user_tells_before_asking_is_a_piece_and_the_asking_is_not() -> None:
    asked = "I'm a physiotherapist, so my back is fine, but what foods help with jet lag?"
    pieces = record_pieces(asked, "user")
    assert "I'm a physiotherapist" in pieces and "my back is fine" in pieces
    assert not any(p.startswith("what foods") for p in pieces)
    # a question that tells nothing, or only asks, stays whole
    for asked in ("Can you help me with my CV?", "What should I cook, given that I'm vegan?"):
        assert record_pieces(asked, "user") == chunks(asked)
    # someone of the user's named inside a question is a piece of their own
    assert "my partner Tomás" in record_pieces("What should I get my partner Tomás?", "user")
