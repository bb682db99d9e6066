"""Calibrating the estimate from the backend's own reports (calibration.py).

The anchoring rule does not change; only the estimate of what changed since
the last report does. A stand-in backend below counts tokens its own way
(words and punctuation, plus template glue per prompt-side message), so the
calibrator has something real to learn.
"""

from __future__ import annotations

import json
import math
import random
import re

import pytest

from newt.memory import (
    CalibratedEstimation,
    Calibrator,
    ConversationTurn,
    MemMessage,
    TokenBudget,
    TokenEstimation,
    TurnMetrics,
    Usage,
    pieces,
)
from newt.memory.calibration import PromptShape, _ascii_pieces, _pieces_by_match

# -- the unit of estimation -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hello world", 2.0),  # ASCII words; single spaces are free
        ("internationalization", 1.0),  # one letter run, however long
        ("123", 2.25),  # 0.75 per digit
        ("a,b", 2.875),  # punctuation 0.875
        ("\n    x", 0.75 + 3 * 0.7 + 1.0),  # a line break, indentation, a word
        ("é", 1.125),  # non-ASCII runs: 1 + 0.125 per letter
        ("forstår", 1.875),
        ("", 0.0),
    ],
)
def test_pieces(text: str, expected: float) -> None:
    assert pieces(text) == pytest.approx(expected)


def test_ascii_text_counts_the_same_by_the_fast_path() -> None:
    """ASCII text (most replies) is counted with the regex engine in bulk; it
    must give what the match-by-match count gives, on every mix of letters,
    digits, punctuation, underscores, line breaks and odd whitespace."""
    rng = random.Random(14)
    alphabet = "ab Z_9 \n\t  \r\x0b\x0c\x1c\x1f.,;{}()[]-+*'\"`#|_\\/0123456789xyzQ"
    texts = ["", " ", "  ", "\n\n", "def f(x):\n    return x_1 * 2\n"]
    texts += [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 120))) for _ in range(3000)
    ]
    for text in texts:
        assert _ascii_pieces(text) == pytest.approx(_pieces_by_match(text), abs=1e-9), repr(text)
    assert pieces("x\n    y") == _pieces_by_match("x\n    y")  # ASCII goes the fast way


def test_calibrated_estimation_adds_glue_to_prompt_side_messages() -> None:
    est = CalibratedEstimation(chars_per_token=2.0, per_message_tokens=10.0, per_reply_tokens=3)
    assert est.content_tokens("hello world") == 4  # 2 pieces x 4 chars / 2
    assert est.tokens_for("hello world") == 14
    assert (est.tokens_for(""), est.content_tokens("")) == (0, 0)
    assert CalibratedEstimation(4.0, 0.0).tokens_for("hello world") == 2


# -- learning ------------------------------------------------------------------------

# A model spending 1.25 tokens per piece (3.2 chars per token), 15 tokens of
# glue per prompt-side message and 12 per reply.
TRUE_SCALE, TRUE_GLUE, TRUE_REPLY_GLUE = 1.25, 15.0, 12.0


def simulated_prompt(sizes: list[float], reply: int = 60) -> tuple[PromptShape, int]:
    """system + user messages of `sizes` pieces, a reported reply between each."""
    replies = len(sizes) - 2
    shape = PromptShape(sum(sizes), len(sizes), replies, replies * reply)
    glue = TRUE_GLUE * shape.prompt_side + TRUE_REPLY_GLUE * replies
    return shape, round(TRUE_SCALE * shape.pieces + glue) + shape.reported


def test_the_calibrator_learns_ratio_and_glue_from_consecutive_prompts() -> None:
    cal = Calibrator()
    assert (cal.chars_per_token, cal.per_message_tokens, cal.per_reply_tokens) == (4, 4, 4)
    sizes = [120.0]  # the system prompt
    for size in [40, 210, 75, 160, 20, 95, 300, 55, 130, 80]:
        sizes.append(float(size))
        cal.observe_prompt(*simulated_prompt(sizes))
    assert cal.chars_per_token == pytest.approx(4 / TRUE_SCALE, rel=0.02)  # 3.2
    assert cal.per_message_tokens == pytest.approx(TRUE_GLUE, abs=1)
    assert cal.per_reply_tokens == pytest.approx(TRUE_REPLY_GLUE, abs=1)
    assert cal.observations == 10


def test_a_report_far_off_the_fit_is_ignored() -> None:
    cal = Calibrator(3.2, 15.0, 12.0)
    sizes = [100.0]
    for size in (50, 150, 90, 70):
        sizes.append(float(size))
        cal.observe_prompt(*simulated_prompt(sizes))
    learned = cal.estimation
    # A request that also carried 3,000 tokens of tool results:
    change = round(TRUE_SCALE * 60 + TRUE_GLUE + TRUE_REPLY_GLUE)
    assert cal.observe(60.0, 1, 1, change + 3000) is False
    assert cal.estimation == learned
    assert cal.observe(60.0, 1, 1, change) is True


def test_prompt_shape_counts_reported_replies_apart() -> None:
    messages = [
        MemMessage("system", "hello world"),
        MemMessage("user", "a,b"),
        MemMessage("assistant", "one two three"),
        MemMessage("user", "123"),
        MemMessage("assistant", "four five"),
        MemMessage("user", "next"),
    ]
    shape = PromptShape.of(messages, [17, None])
    assert shape == PromptShape(2.0 + 2.875 + 2.25 + 2.0 + 1.0, 4, 2, 17)


# -- the provider, calibrated --------------------------------------------------------


async def test_a_reported_reply_costs_exactly_its_completion_tokens() -> None:
    p = TokenBudget().with_calibration()
    assert p.learned_chars_per_token is None
    p.build_messages("sys", "x" * 50)
    await p.sync_turn("x" * 50, "a reply of any length " * 10, TurnMetrics(Usage(500, 37)))
    assert p.usage()[1] == 537
    assert isinstance(p.learned_chars_per_token, float)


def test_set_chars_per_token_turns_calibration_on_from_a_cached_ratio() -> None:
    p = TokenBudget()
    assert p.estimation == TokenEstimation()
    p.set_chars_per_token(3.0)
    assert isinstance(p.estimation, CalibratedEstimation)
    assert p.estimation.chars_per_token == 3.0
    assert p.tokens_for("hello world") == p.estimation.tokens_for("hello world")
    p.reset()
    assert p.estimation.chars_per_token == 3.0  # per model: kept across conversations


# A stand-in backend with its own tokenizer: every word and punctuation mark
# is a token; a prompt-side message carries 12 tokens of glue, a reply 5 once
# another message follows it (as chat templates render a trailing reply).


def backend_tokens(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


def backend_prompt(messages: list[MemMessage]) -> int:
    total = 0
    for i, m in enumerate(messages):
        total += backend_tokens(m.content)
        if m.role != "assistant":
            total += 12
        elif i + 1 < len(messages):
            total += 5
    return total


def message(i: int) -> str:
    kind = i % 3
    if kind == 0:
        return "Please tell me more about the lighthouse keeper and the seagulls. " * (1 + i % 4)
    if kind == 1:
        return (
            "```python\n" + "\n".join(f"x_{j} = f({j}, y[{j}])" for j in range(2 + i % 5)) + "\n```"
        )
    return json.dumps({"id": i, "tags": ["a", "b"], "scores": [1.5, 2.25, i]})


async def run(p: TokenBudget, turns: int) -> list[float]:
    errors = []
    for i in range(turns):
        user, reply = message(i), message(i + 1)
        sent = p.build_messages("You are a test.", user)
        usage = Usage(backend_prompt(sent), backend_tokens(reply))
        await p.sync_turn(user, reply, TurnMetrics(usage))
        p.take_compaction_record()  # persisted by the app
        held = p.build_messages("You are a test.", "")[:-1]  # without the new message
        truth = backend_prompt(held)
        errors.append(abs(p.usage()[1] - truth) / truth)
    return errors


async def test_calibration_keeps_fullness_close_to_the_backends_count() -> None:
    calibrated = TokenBudget(2000, 0.4).with_calibration()  # budget 800
    errors = await run(calibrated, 40)
    assert calibrated.compactions >= 5
    assert max(errors[8:]) <= 0.03  # after a few reports: within 3% every turn
    plain = TokenBudget(2000, 0.4)
    assert max(await run(plain, 40)) > 0.05  # chars/4 alone drifts further


async def test_calibrated_round_trip_with_reported_turns() -> None:
    live = TokenBudget(2000, 0.4).with_calibration()
    log: list[ConversationTurn] = []
    for i in range(20):
        user, reply = message(i), message(i + 1)
        usage = Usage(backend_prompt(live.build_messages("S", user)), backend_tokens(reply))
        log.append(ConversationTurn(user, reply, usage.input_tokens, usage.output_tokens))
        await live.sync_turn(user, reply, TurnMetrics(usage))
        if (record := live.take_compaction_record()) is not None:
            log.append(
                ConversationTurn(record, "", None, None, live.resident_turns(), live.usage()[1])
            )
    assert live.compactions >= 2
    # A new session seeds the calibrator with the cached ratio only; reported
    # replies cost their completion_tokens, so the restored figure is exact.
    restored = TokenBudget(2000, 0.4)
    restored.set_chars_per_token(live.learned_chars_per_token or 4.0)
    restored.restore_turns(log)
    assert restored.usage() == live.usage()
    assert restored.build_messages("S", "N") == live.build_messages("S", "N")
    assert math.isclose(restored.estimation.chars_per_token, live.estimation.chars_per_token)
