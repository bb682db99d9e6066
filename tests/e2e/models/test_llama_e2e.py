"""End to end against llama.cpp's llama-server (Gemma 3 270M, -c 1024).

The model is a base model, so its replies are nonsense; what is checked is the
protocol: streaming, usage figures against the server's own tokenizer, the
probe, and the context-overflow error with its sizes.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from newt.backend.client import ChatClient
from newt.backend.errors import ContextLengthExceededError
from newt.backend.learned_limits import record_overflow, record_probe, resolve_budget
from newt.backend.probe import ProbeResult, probe_context_window
from newt.backend.types import ChatResult, StreamEvent, StreamText
from newt.store import Store

if TYPE_CHECKING:
    from tests.support.llama_server import LlamaServer

pytestmark = pytest.mark.llama

# Prose, code, JSON and accented text: chars/4 is a poor guess for these.
MESSAGES = [
    {"role": "system", "content": "You are newt, a terse assistant. Réponds brièvement."},
    {
        "role": "user",
        "content": 'Explain this: `def f(x): return {"k": [x, x**2]}` — café, naïve, 東京.',
    },
]


async def stream(
    llama: LlamaServer, messages: list[dict[str, Any]], **kw: Any
) -> list[StreamEvent]:
    async with ChatClient(llama.base_url, llama.model, timeout_s=120) as client:
        return [event async for event in client_stream(client, messages, **kw)]


async def client_stream(
    client: ChatClient, messages: list[dict[str, Any]], **kw: Any
) -> AsyncIterator[StreamEvent]:
    async with aclosing(client.stream_chat(messages, **kw)) as events:
        async for event in events:
            yield event


async def test_streaming_reply(llama_server: LlamaServer):
    events = await stream(llama_server, MESSAGES, max_tokens=16, temperature=0.0)
    *deltas, result = events
    assert isinstance(result, ChatResult)
    assert deltas and all(isinstance(d, StreamText) for d in deltas)
    assert "".join(d.text for d in deltas if isinstance(d, StreamText)) == result.text
    assert not result.interrupted
    assert result.finish_reason in ("stop", "length")
    assert result.usage is not None
    assert 1 <= result.usage.completion_tokens <= 16


async def test_usage_matches_the_servers_own_token_count(llama_server: LlamaServer):
    *_, result = await stream(llama_server, MESSAGES, max_tokens=4)
    assert isinstance(result, ChatResult) and result.usage is not None
    templated = llama_server.apply_template(MESSAGES)
    without_bos = len(llama_server.tokenize(templated))
    with_bos = llama_server.prompt_tokens(MESSAGES)
    assert with_bos - without_bos in (0, 1)  # Gemma adds one BOS token
    assert result.usage.prompt_tokens == with_bos
    chars_over_4 = math.ceil(sum(len(m["content"]) for m in MESSAGES) / 4)
    usage = result.usage.prompt_tokens
    print(f"prompt_tokens={usage} tokenize={without_bos}+BOS chars/4={chars_over_4}")


async def test_repeated_prompt_reports_cached_tokens(llama_server: LlamaServer):
    await stream(llama_server, MESSAGES, max_tokens=2)
    *_, result = await stream(llama_server, MESSAGES, max_tokens=2)
    assert isinstance(result, ChatResult) and result.usage is not None
    assert result.usage.cached_tokens is not None
    assert 0 < result.usage.cached_tokens <= result.usage.prompt_tokens


async def test_complete_and_tools_are_accepted(llama_server: LlamaServer):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "recall_memory",
                "description": "Search memory",
                "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
            },
        }
    ]
    async with ChatClient(llama_server.base_url, llama_server.model, timeout_s=120) as client:
        result = await client.complete(MESSAGES, tools=tools, max_tokens=4)
    assert result.usage is not None
    assert result.usage.prompt_tokens > llama_server.prompt_tokens(MESSAGES) // 2


async def test_probe_reads_n_ctx(llama_server: LlamaServer):
    result = await probe_context_window(llama_server.base_url, llama_server.model)
    assert result == ProbeResult(llama_server.n_ctx, "llama-server /props")


async def test_oversized_prompt_is_a_context_length_error(
    llama_server: LlamaServer, tmp_path: Path
):
    messages = [{"role": "user", "content": "the sea is wide and deep. " * 250}]
    expected = llama_server.prompt_tokens(messages)
    assert expected > llama_server.n_ctx
    async with ChatClient(llama_server.base_url, llama_server.model, timeout_s=120) as client:
        with pytest.raises(ContextLengthExceededError) as info:
            await stream_once(client, messages)
    assert info.value.status == 400
    assert info.value.context_window == llama_server.n_ctx
    assert info.value.prompt_tokens == expected
    print(f"overflow: prompt_tokens={info.value.prompt_tokens} n_ctx={info.value.context_window}")

    # The capability cache turns that into a budget below the window.
    async with await Store.open(tmp_path / "newt.db") as store:
        await record_probe(store.capabilities, llama_server.base_url, "m", llama_server.n_ctx)
        overflow_at = info.value.overflow_at
        assert overflow_at is not None
        cap = await record_overflow(store.capabilities, llama_server.base_url, "m", overflow_at)
    assert cap.safe_context == math.floor(0.75 * expected)
    budget = resolve_budget(None, cap)
    assert budget.source == "backend"
    assert budget.context_tokens == min(llama_server.n_ctx, math.floor(0.75 * expected))


async def stream_once(client: ChatClient, messages: list[dict[str, Any]]) -> None:
    async for _ in client_stream(client, messages, max_tokens=4):
        pass
