"""`newt -p` and the model's reasoning: left out unless --show-thinking."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.session_helpers import MODEL, newt_cmd


def args(fake: FakeOpenAI, *extra: str) -> list[str]:
    return ["--base-url", fake.base_url, "--model", MODEL, *extra]


def both_forms() -> list[Reply]:
    return [
        Reply(text="<think>\nprivate plan\x1b]52;c;aGk=\x07</think>\n\nThe answer.", chunk_size=1),
        Reply(text="The answer.", reasoning="private plan"),
    ]


def test_thinking_is_left_out_by_default(fake_openai: FakeOpenAI, _isolated_home: Path):
    fake_openai.script(*both_forms())
    for _ in range(2):
        result = newt_cmd(*args(fake_openai, "-p", "q"), home=_isolated_home)
        assert result.returncode == 0, result.stderr
        assert result.stdout == "The answer.\n"
    fake_openai.script(*both_forms())
    for _ in range(2):
        result = newt_cmd(*args(fake_openai, "-p", "q", "--json"), home=_isolated_home)
        data = json.loads(result.stdout)
        assert data["reply"] == "The answer." and "thinking" not in data
        assert "private" not in result.stdout


def test_show_thinking_prints_it_first_and_safely(fake_openai: FakeOpenAI, _isolated_home: Path):
    fake_openai.script(*both_forms())
    for _ in range(2):
        result = newt_cmd(*args(fake_openai, "-p", "q", "--show-thinking"), home=_isolated_home)
        assert result.returncode == 0, result.stderr
        # the escape sequence (a clipboard write) never reaches the terminal
        assert result.stdout == "<think>\nprivate plan\n</think>\n\nThe answer.\n"
    fake_openai.script(*both_forms())
    for _ in range(2):
        result = newt_cmd(
            *args(fake_openai, "-p", "q", "--json", "--show-thinking"), home=_isolated_home
        )
        data = json.loads(result.stdout)
        assert (data["thinking"], data["reply"]) == ("private plan", "The answer.")


def test_json_reports_speed_and_conversation_totals(fake_openai: FakeOpenAI, _isolated_home: Path):
    fake_openai.script(
        Reply(text="one two three", prompt_tokens=50, completion_tokens=5, delay_s=0.02),
        Reply(text="two", prompt_tokens=70, completion_tokens=7, delay_s=0.02),
    )
    first = json.loads(
        newt_cmd(*args(fake_openai, "-p", "a", "--json"), home=_isolated_home).stdout
    )
    assert first["conversation_usage"] == {
        "prompt_tokens": 50,
        "completion_tokens": 5,
        "replies": 1,
        "estimated_replies": 0,
    }
    assert first["usage"]["tokens_per_second"] > 0
    second = json.loads(
        newt_cmd(*args(fake_openai, "-c", "-p", "b", "--json"), home=_isolated_home).stdout
    )
    usage = second["conversation_usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["replies"]) == (120, 12, 2)


def test_show_thinking_needs_print(_isolated_home: Path):
    result = newt_cmd("--show-thinking", home=_isolated_home)
    assert result.returncode == 2 and "--show-thinking only works with -p" in result.stderr
