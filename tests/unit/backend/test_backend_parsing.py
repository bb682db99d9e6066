"""Pure parsing: SSE framing, chunk accumulation, retry timing."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from newt.backend.errors import MalformedStreamError
from newt.backend.response import StreamAccumulator, parse_completion, parse_tool_arguments
from newt.backend.retry import backoff_delay, parse_retry_after
from newt.backend.sse import SSEEvent, iter_sse
from newt.backend.types import ChatUsage


async def lines(*items: str) -> AsyncIterator[str]:
    for item in items:
        yield item


async def events(*items: str) -> list[SSEEvent]:
    return [e async for e in iter_sse(lines(*items))]


async def test_sse_groups_data_lines_and_skips_comments():
    got = await events(
        ": keep-alive",
        'data: {"a":',
        "data: 1}",
        "",
        "event: ping",
        "data:x",
        "",
        "id: 7",
        "retry: 100",
        "",
    )
    assert got == [SSEEvent("message", '{"a":\n1}'), SSEEvent("ping", "x")]


async def test_sse_llama_server_error_line_and_unterminated_tail():
    got = await events('error: {"message": "boom"}', "data: [DONE]")
    assert got == [
        SSEEvent("error", '{"message": "boom"}'),
        SSEEvent("message", "[DONE]", complete=False),
    ]


def test_accumulator_text_finish_and_usage():
    acc = StreamAccumulator()
    role = {"role": "assistant", "content": ""}
    assert acc.feed({"choices": [{"index": 0, "delta": role}]}) == ""
    assert acc.feed({"choices": [{"index": 0, "delta": {"content": "Hel"}}]}) == "Hel"
    assert acc.feed({"choices": [{"index": 0, "delta": {"content": "lo"}}]}) == "lo"
    acc.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    assert not acc.complete
    usage = {
        "prompt_tokens": 12,
        "completion_tokens": 2,
        "prompt_tokens_details": {"cached_tokens": 8},
    }
    acc.feed({"choices": [], "usage": usage})
    result = acc.result()
    assert acc.complete
    assert result.text == "Hello"
    assert result.finish_reason == "stop"
    assert result.usage == ChatUsage(12, 2, 8)
    assert not result.interrupted


def test_accumulator_tool_calls_by_index_across_chunks():
    acc = StreamAccumulator()

    def tc(**part: object) -> dict:
        return {"choices": [{"index": 0, "delta": {"tool_calls": [part]}}]}

    acc.feed(tc(index=0, id="a", type="function", function={"name": "save_note", "arguments": ""}))
    acc.feed(tc(index=1, id="b", function={"name": "recall_memory", "arguments": '{"qu'}))
    acc.feed(tc(index=0, function={"arguments": '{"action": "add",'}))
    acc.feed(tc(index=1, function={"arguments": 'ery": "cats"}'}))
    acc.feed(tc(index=0, function={"arguments": ' "content": "x"}'}))
    calls = acc.result().tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("a", "save_note", {"action": "add", "content": "x"}),
        ("b", "recall_memory", {"query": "cats"}),
    ]
    assert calls[1].raw_arguments == '{"query": "cats"}'


def test_accumulator_tool_calls_without_index_use_the_id():
    acc = StreamAccumulator()
    for call_id in ("x", "y"):
        call = {"id": call_id, "function": {"name": "f", "arguments": {"k": call_id}}}
        acc.feed({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    assert [c.arguments for c in acc.result().tool_calls] == [{"k": "x"}, {"k": "y"}]


@pytest.mark.parametrize(
    ("raw", "args", "has_error"),
    [
        ("", {}, False),
        ('{"a": 1}', {"a": 1}, False),
        ('{"a": ', {}, True),
        ("[1, 2]", {}, True),
    ],
)
def test_parse_tool_arguments(raw: str, args: dict, has_error: bool):
    parsed, error = parse_tool_arguments(raw)
    assert parsed == args
    assert (error is not None) is has_error


def test_malformed_chunk_shapes_keep_partial_text():
    acc = StreamAccumulator()
    acc.feed({"choices": [{"index": 0, "delta": {"content": "so far"}}]})
    with pytest.raises(MalformedStreamError) as info:
        acc.feed({"choices": "nope"})
    assert info.value.partial_text == "so far"
    with pytest.raises(MalformedStreamError):
        acc.feed(["not", "an", "object"])


def test_parse_completion_with_tool_calls():
    result = parse_completion(
        {
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "fetch_record", "arguments": '{"key": "k"}'},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3},
        }
    )
    assert result.text == ""
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("c1", "fetch_record", {"key": "k"})
    ]
    assert result.usage == ChatUsage(5, 3, None)
    assert result.finish_reason == "tool_calls"


def test_parse_completion_rejects_garbage():
    with pytest.raises(MalformedStreamError):
        parse_completion({"object": "list"})


def test_retry_after_parsing_and_cap():
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"Retry-After": "3600"}) == 60.0
    assert parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_is_exponential_with_jitter_and_capped():
    assert backoff_delay(0, rand=lambda: 0.0) == 0.5
    assert backoff_delay(1, rand=lambda: 0.0) == 1.0
    assert backoff_delay(1, rand=lambda: 1.0) == 0.75
    assert backoff_delay(10, rand=lambda: 0.0) == 8.0
    assert backoff_delay(0, retry_after=2.5) == 2.5
    assert backoff_delay(0, retry_after=500) == 60.0


def test_llama_servers_cache_count_is_the_cached_tokens():
    # llama-server sends its prompt cache's share in `timings` beside the usage
    acc = StreamAccumulator()
    acc.feed({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]})
    usage = {"prompt_tokens": 1500, "completion_tokens": 1}
    acc.feed({"choices": [], "usage": usage, "timings": {"cache_n": 1420, "prompt_n": 80}})
    assert acc.result().usage == ChatUsage(1500, 1, 1420)
    # OpenAI's own field wins where both are sent; neither: unknown, not zero
    both = {**usage, "prompt_tokens_details": {"cached_tokens": 1024}}
    acc = StreamAccumulator()
    acc.feed({"choices": [], "usage": both, "timings": {"cache_n": 1420}})
    assert acc.result().usage == ChatUsage(1500, 1, 1024)
    acc = StreamAccumulator()
    acc.feed({"choices": [], "usage": usage})
    assert acc.result().usage == ChatUsage(1500, 1, None)
