"""A turn that ends with no answer says so and exits non-zero, and what a model
wrote instead of an answer is never recalled: real `newt -p` processes, the
fake server, a real database. Each failure below was seen with the model newt
installs (Qwen2.5-Coder-1.5B) in a new user's afternoon."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.session_helpers import MODEL, newt_cmd

FACT = "We finally got a dog last week, a greyhound called Biscuit."
PLACEHOLDER = "To answer this question, I would recall the information from earlier conversations."
DOUBLED = '{{"name": "recall_memory", "arguments": {"query": "4172"}}}'
REFUSAL = "I'm sorry, but I can't assist with that."
MADE_UP = '```json\n{"name": "cooking class", "arguments": {"when": "Tuesday"}}\n```'


def args(fake: FakeOpenAI, *extra: str) -> list[str]:
    return ["--base-url", fake.base_url, "--model", MODEL, *extra]


def test_an_empty_final_reply_says_so_and_exits_one(
    fake_openai: FakeOpenAI, _isolated_home: Path
) -> None:
    fake_openai.script(Reply(text=""))
    result = newt_cmd(*args(fake_openai, "-p", "What is my greyhound called?", "--json"),
                      home=_isolated_home)  # fmt: skip
    assert result.returncode == 1
    assert "no answer" in result.stderr
    data = json.loads(result.stdout)
    assert data["status"] == "failed" and "no answer" in data["error"]["message"]


def test_a_loop_of_calls_ends_in_an_error_not_an_empty_success(
    fake_openai: FakeOpenAI, _isolated_home: Path
) -> None:
    note = Reply(text="", tool_calls=[{"name": "save_note", "arguments": {"action": "add"}}])
    fake_openai.script(note, note, note, note, note)
    result = newt_cmd(*args(fake_openai, "-p", "What is my greyhound called?"),
                      home=_isolated_home)  # fmt: skip
    assert result.returncode == 1 and "no answer" in result.stderr
    assert len(fake_openai.chat_requests) <= 3  # cut at the repeated call, not eight rounds


@pytest.mark.parametrize("failure", [PLACEHOLDER, DOUBLED, MADE_UP, REFUSAL, ""])
def test_a_reply_that_was_no_answer_is_never_recalled(
    fake_openai: FakeOpenAI, _isolated_home: Path, failure: str
) -> None:
    fake_openai.script(Reply(text="Lovely, congratulations!"))
    assert newt_cmd(*args(fake_openai, "-p", FACT), home=_isolated_home).returncode == 0
    fake_openai.script(Reply(text=failure))
    newt_cmd(*args(fake_openai, "-p", "What is my greyhound called?"), home=_isolated_home)
    fake_openai.script(Reply(text="Biscuit."))
    asked = newt_cmd(*args(fake_openai, "-p", "The greyhound, what is he called?"),
                     home=_isolated_home)  # fmt: skip
    assert asked.returncode == 0, asked.stderr
    sent = json.dumps(fake_openai.chat_requests[-1].body["messages"])
    assert "Biscuit" in sent  # the fact is recalled
    for line in (PLACEHOLDER, "4172", "cooking class", "recall the information", "assist with"):
        assert line not in sent
    con = sqlite3.connect(_isolated_home / "newt.db")
    try:
        held = con.execute("SELECT content FROM memory_records WHERE role = 'assistant'")
        assert all(failure.strip() not in row[0] or not failure for row in held)
    finally:
        con.close()


def test_what_the_user_said_to_a_model_that_gave_no_answer_is_still_remembered(
    fake_openai: FakeOpenAI, _isolated_home: Path
) -> None:
    fake_openai.script(Reply(text=""))
    told = newt_cmd(*args(fake_openai, "-p", FACT), home=_isolated_home)
    assert told.returncode == 1 and "no answer" in told.stderr
    fake_openai.script(Reply(text="Biscuit."))
    asked = newt_cmd(*args(fake_openai, "-p", "The greyhound, what is he called?"),
                     home=_isolated_home)  # fmt: skip
    assert asked.returncode == 0, asked.stderr
    assert "Biscuit" in json.dumps(fake_openai.chat_requests[-1].body["messages"])
