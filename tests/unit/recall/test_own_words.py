"""A user asking about themselves is answered from their own lines: the
assistant's replies, which echo or advise, are not carried for it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from newt.recall import RecallEngine, RecallRequest
from newt.recall.own_words import about_the_user
from newt.store import Store

# The user's fact said in passing, and a reply full of the question's words.
TURNS = [
    (
        "I avoid meat and fish: I've been vegetarian since university. Plan meals for two?",
        "A plan. Avoid sugary food at breakfast; the food to avoid at dinner is fried food.",
    ),
    ("Our hallway is getting a coat of sage green this weekend.", "Let the first coat dry."),
]


def test_a_message_about_the_user_and_not_the_assistant() -> None:
    assert about_the_user("What sort of food do I avoid?")
    assert about_the_user("What\u2019s our pet called?")
    assert about_the_user("Which month is my brother's wedding?")
    assert not about_the_user("What food did you tell me to avoid?")
    assert not about_the_user("Can you remind me of my dog's name?")
    assert not about_the_user("Remind me what the plan was.")  # asks the assistant
    assert not about_the_user("What did Caroline paint last summer?")


async def test_the_assistants_lines_are_not_carried_for_a_question_about_the_user(
    tmp_path: Path,
) -> None:
    async with await Store.open(tmp_path / "newt.db") as store:
        conv = await store.conversations.create()
        for user, reply in TURNS:
            turn = await store.turns.add_pending(conv.id, user)
            await store.turns.complete(turn, reply)
        engine = RecallEngine(store)

        async def roles(query: str, from_user: bool = True) -> list[str | None]:
            request = RecallRequest(query, limit=8, from_user=from_user)
            found = await engine.recall(request, count_hits=False)
            return [m.role for m in found.memories]

        asked = await roles("What sort of food do I avoid?")
        assert "user" in asked and "assistant" not in asked, asked
        # Asked of the assistant's words, its reply comes back.
        assert "assistant" in await roles("What food did you say to avoid?")
        # A search (the memory browser's, the model's recall_memory) finds every line.
        assert "assistant" in await roles("What sort of food do I avoid?", from_user=False)
        # Off (to measure it), the reply rides along as before.
        engine.tuning = replace(engine.tuning, own_words=False)
        assert "assistant" in await roles("What sort of food do I avoid?")


async def test_a_reply_that_is_no_hit_brings_no_lines_around_it(tmp_path: Path) -> None:
    # Only the reply holds the message's words; the user's lines around it
    # (its turn's message, the message after it) are about other things.
    turns = [
        (
            "We live in Cork and it rains all the time. What amuses a twelve-year-old indoors?",
            "Board games, baking, or a laptop game that never overheats an old laptop.",
        ),
        ("Our car is a grey Toyota Yaris hybrid.", "Hybrids need little servicing."),
    ]
    async with await Store.open(tmp_path / "newt.db") as store:
        conv = await store.conversations.create()
        for user, reply in turns:
            turn = await store.turns.add_pending(conv.id, user)
            await store.turns.complete(turn, reply)
        engine = RecallEngine(store)

        async def carried(query: str, from_user: bool = True) -> list[str]:
            request = RecallRequest(query, limit=8, from_user=from_user)
            found = await engine.recall(request, count_hits=False)
            return [m.content for m in found.memories]

        asked = "Why does my laptop overheat?"
        assert await carried(asked) == []
        # A search finds the reply, and the lines around it come with it.
        searched = await carried(asked, from_user=False)
        assert turns[0][1] in searched and turns[0][0] in searched, searched
