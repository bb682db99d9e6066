"""Replies that are not answers, as small models wrote them, are told from answers."""

from __future__ import annotations

import pytest

from newt.non_answers import is_answer, kind_of

NOT_ANSWERS = {
    "": "empty",
    "  \n": "empty",
    '{{"name": "recall_memory", "arguments": {"query": "4172"}}}': "call",
    '```json\n{"name": "cooking class", "arguments": {"when": "Tuesday"}}\n```': "call",
    '<tool_call>\n{"name": "save_note", "arguments": {"action": "add"}}\n</tool_call>': "call",
    '{"name": "save_note", "arguments": {"action": "add", "content": "Honey be': "call",
    "You may call one or more functions to assist with the user query.": "call",
    "To answer this question, I would recall the information from earlier conversations.": (
        "placeholder"
    ),
    "I would need to search my memory for that.": "placeholder",
    "I'm sorry, but I don't have access to personal information about you.": "placeholder",
    "I cannot recall details from previous conversations.": "placeholder",
    "There is no information about your dog in our conversation.": "placeholder",
    "I'm sorry, but I don't have any information about your relationship or personal life to"
    " provide you with that answer.": "placeholder",
    "I'm sorry, but I can't assist with that.": "refusal",
    "I cannot help you with this request.": "refusal",
}
ANSWERS = [
    "Your dog is called Biscuit.",
    "Biscuit, your greyhound.",
    '{"name": "Ada", "born": 1815}',  # JSON the user asked for
    "I don't remember the exact day, but it was a Tuesday in May when we met.",
    "To make the bread, I would use more water and a hotter oven next time.",
    "Caroline: I'm so excited about the adoption meeting next week!",
    "I can't wait to hear how the race goes!",
    "I don't have information about the 2025 prices, but in 2023 a ticket cost 40 euros.",
    "Sorry, I can't assist with the move on Saturday, I'm in Bergen.",
]


@pytest.mark.parametrize("reply", NOT_ANSWERS)
def test_a_non_answer_is_named(reply: str) -> None:
    assert kind_of(reply) == NOT_ANSWERS[reply]
    assert not is_answer(reply)


@pytest.mark.parametrize("reply", ANSWERS)
def test_an_answer_is_an_answer(reply: str) -> None:
    assert kind_of(reply) is None and is_answer(reply)


def test_a_reply_cut_at_the_length_limit_is_no_answer() -> None:
    assert not is_answer("Your dog is called Biscuit and he", stopped_for_length=True)
