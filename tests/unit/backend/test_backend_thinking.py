"""Reasoning apart from the answer: both forms, cut at every possible place.

The splitter and accumulator alone, then ChatClient reading each cut as SSE from
tests/support/mock_backend.py (no socket: the cuts are in the events, not the bytes).
"""

from __future__ import annotations

import itertools
from contextlib import aclosing

import pytest

from newt.backend.client import ChatClient
from newt.backend.response import StreamAccumulator, parse_completion
from newt.backend.thinking import ThinkTagSplitter
from newt.backend.types import ChatResult, StreamEvent, StreamText, StreamThinking
from tests.support.fake_openai import Reply
from tests.support.mock_backend import MockBackend

TAGGED = "<think>\nThe user greets; greet back.\n</think>\n\nHello <b>there</b>!"
THOUGHT = "\nThe user greets; greet back.\n"
ANSWER = "Hello <b>there</b>!"


def split_all(pieces: list[str]) -> tuple[str, str]:
    splitter = ThinkTagSplitter()
    thinking, answer = [], []
    for piece in pieces:
        t, a = splitter.feed(piece)
        thinking.append(t)
        answer.append(a)
    t, a = splitter.flush()
    return "".join(thinking) + t, "".join(answer) + a


def test_tags_cut_at_every_pair_of_places():
    # every way to cut the text in three: each tag split at each of its characters
    for i, j in itertools.combinations(range(1, len(TAGGED)), 2):
        pieces = [TAGGED[:i], TAGGED[i:j], TAGGED[j:]]
        assert split_all(pieces) == (THOUGHT, ANSWER), pieces


def test_tags_one_character_at_a_time():
    assert split_all(list(TAGGED)) == (THOUGHT, ANSWER)


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        (["No thinking here."], ("", "No thinking here.")),
        (["  <thi", "nk>a</th", "ink>b"], ("a", "b")),  # leading blanks before the tag
        (["<", "b>bold</b>"], ("", "<b>bold</b>")),  # looked like a tag, was not
        (["<thi"], ("", "<thi")),  # the stream ended on what might have been a tag
        (["<think>still thinking</thi"], ("still thinking</thi", "")),  # cut off mid-thought
        (["Use <think>…</think> tags."], ("", "Use <think>…</think> tags.")),  # not at the start
        (["<think>a</think>", "\n\n", "\n", "b <think>x</think>"], ("a", "b <think>x</think>")),
        (["\n"], ("", "\n")),
    ],
)
def test_tag_edge_cases(pieces: list[str], expected: tuple[str, str]):
    assert split_all(pieces) == expected


def chunk(delta: dict[str, object]) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": delta}]}


def test_accumulator_reads_reasoning_content_and_reasoning():
    acc = StreamAccumulator()
    deltas = acc.feed_deltas(chunk({"reasoning_content": "first ", "content": None}))
    deltas += acc.feed_deltas(chunk({"reasoning": "second"}))
    deltas += acc.feed_deltas(chunk({"content": "answer"}))
    assert deltas == [StreamThinking("first "), StreamThinking("second"), StreamText("answer")]
    result = acc.result()
    assert (result.thinking, result.text) == ("first second", "answer")


def test_whole_completion_with_either_form():
    body = {"choices": [{"index": 0, "message": {"content": TAGGED}, "finish_reason": "stop"}]}
    result = parse_completion(body)
    assert (result.thinking, result.text) == (THOUGHT, ANSWER)
    message = {"content": "4", "reasoning_content": "2+2"}
    result = parse_completion({"choices": [{"index": 0, "message": message}]})
    assert (result.thinking, result.text) == ("2+2", "4")


async def stream(client: ChatClient) -> tuple[list[StreamEvent], ChatResult]:
    events: list[StreamEvent] = []
    async with aclosing(client.stream_chat([{"role": "user", "content": "hi"}])) as s:
        async for event in s:
            events.append(event)
    last = events.pop()
    assert isinstance(last, ChatResult)
    return events, last


def joined(events: list[StreamEvent], kind: type) -> str:
    return "".join(e.text for e in events if isinstance(e, kind))  # type: ignore[attr-defined]


async def test_tags_over_http_at_every_chunk_size(mock_backend: MockBackend):
    client = ChatClient(mock_backend.base_url, "fake-model", transport=mock_backend.transport)
    try:
        for size in range(1, len(TAGGED) + 1):
            mock_backend.script(Reply(text=TAGGED, chunk_size=size))
            events, result = await stream(client)
            assert (joined(events, StreamThinking), joined(events, StreamText)) == (THOUGHT, ANSWER)
            assert (result.thinking, result.text) == (THOUGHT, ANSWER), size
            # all thinking arrives before any answer
            kinds = [type(e) for e in events]
            assert kinds == sorted(kinds, key=lambda k: k is StreamText), size
    finally:
        await client.aclose()


async def test_tags_over_http_cut_inside_each_tag(mock_backend: MockBackend):
    client = ChatClient(mock_backend.base_url, "fake-model", transport=mock_backend.transport)
    try:
        close_at = TAGGED.index("</think>")
        for i, j in itertools.product(range(1, 7), range(close_at + 1, close_at + 8)):
            pieces = [TAGGED[:i], TAGGED[i:j], TAGGED[j:]]
            mock_backend.script(Reply(chunks=pieces))
            events, result = await stream(client)
            assert (result.thinking, result.text) == (THOUGHT, ANSWER), pieces
            assert joined(events, StreamText) == ANSWER
    finally:
        await client.aclose()


async def test_reasoning_content_over_http_at_every_chunk_size(mock_backend: MockBackend):
    client = ChatClient(mock_backend.base_url, "fake-model", transport=mock_backend.transport)
    thought = "Two and two make four."
    try:
        for size in range(1, len(thought) + 1):
            mock_backend.script(Reply(text="4", reasoning=thought, chunk_size=size))
            events, result = await stream(client)
            assert joined(events, StreamThinking) == thought
            assert (result.thinking, result.text) == (thought, "4")
        # the field Ollama and OpenRouter use, and a server that ignores stream: true
        mock_backend.script(
            Reply(text="4", reasoning=thought, reasoning_field="reasoning"),
            Reply(text="4", reasoning=thought, json_body=True),
        )
        events, result = await stream(client)
        assert (joined(events, StreamThinking), result.thinking) == (thought, thought)
        events, result = await stream(client)
        assert events == [StreamThinking(thought), StreamText("4")]
        assert result.thinking == thought
    finally:
        await client.aclose()
