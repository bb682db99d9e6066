"""Whether a model newt runs itself uses tools well: two small requests, remembered.

A model that neither makes a protocol tool call nor writes one as text when it
is plainly asked to (SmolLM2-135M, base models) is better off without tools: their
schemas take a tenth of a small window and it answers them with noise. A model
that calls a tool when asked to may still not use newt's: with the answer
already in front of it, as recall puts it there, and newt's memory tools
offered, it must answer (at once, or after a call and its result), not loop,
write the call as text or talk about recalling. So before the first turn that
would offer tools to the llama-server newt manages, `probe_tool_calls` asks
both (a few hundred tokens, once) and the verdict is kept in the capability
cache under the model's name (`LOCAL_SERVERS` instead of the server's URL,
whose port is new every run), so each model is asked once. A server the user
runs is not probed: its turns decide (turn/runner.py, `tool_trouble`).
"""

from __future__ import annotations

import time
from typing import Any

from newt.agent.tools.builtin import TOOL_SCHEMAS, tool_call_message
from newt.agent.tools.text_calls import parse
from newt.backend.client import ChatClient
from newt.backend.errors import BackendError, ToolsUnsupportedError
from newt.non_answers import kind_of
from newt.recall.presentation import Packing, evidence_block
from newt.recall.retention import EvidenceCapsule, RetentionReport

# the capability cache's base_url for models newt runs (its second probe: asked anew)
LOCAL_SERVERS = "newt --local, memory probe"
PROBE_TOOL = "get_weather"
PROBE_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": PROBE_TOOL,
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
PROBE_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant with tools."},
    {"role": "user", "content": "What is the weather in Oslo right now? Use the tool."},
]
PROBE_MAX_TOKENS = 64


# The memory probe: a fact recalled into the request, and a question about it.
MEMORY_FACT = "My cat is called Miso."
MEMORY_ANSWER = "miso"
MEMORY_QUESTION = "What is my cat's name?"
MEMORY_REPLY_TOKENS = 48


async def probe_tool_calls(client: ChatClient, system_prompt: str = "") -> bool | None:
    """True when the model calls the probe tool (either way) and answers from memory
    with newt's tools offered; False when it does not or the server refuses tools;
    None when a request failed (ask again later)."""
    try:
        result = await client.complete(
            PROBE_MESSAGES, tools=[PROBE_SCHEMA], max_tokens=PROBE_MAX_TOKENS, temperature=0.0
        )
        called = any(call.name == PROBE_TOOL for call in result.tool_calls)
        if not called and parse(result.text, {PROBE_TOOL}) is None:
            return False
        return await _answers_from_memory(client, system_prompt)
    except ToolsUnsupportedError:
        return False
    except BackendError:
        return None


async def _answers_from_memory(client: ChatClient, system_prompt: str) -> bool:
    """With the fact recalled into the request and newt's tools offered, the model
    answers with it: at once, or after one call and its result."""
    block = evidence_block(_report(), Packing(now=time.time()))
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt or "You are a helpful assistant."},
        {"role": "user", "content": block + MEMORY_QUESTION},
    ]
    names = {t["function"]["name"] for t in TOOL_SCHEMAS}
    for _ in range(2):
        result = await client.complete(
            messages, tools=TOOL_SCHEMAS, max_tokens=MEMORY_REPLY_TOKENS, temperature=0.0
        )
        calls = result.tool_calls or (found.calls if (found := parse(result.text, names)) else [])
        if not calls:
            return kind_of(result.text) is None and MEMORY_ANSWER in result.text.lower()
        messages.append(tool_call_message(calls, ""))
        messages += [
            {"role": "tool", "tool_call_id": call.id, "content": _result(call.name)}
            for call in calls
        ]
    return False


def _report() -> RetentionReport:
    said = time.time() - 3 * 86_400
    capsule = EvidenceCapsule("t1", "t1", MEMORY_FACT, 8, 1.0, 1.0, role="user", said_at=said)
    return RetentionReport(64, 8, [capsule], 1, 0)


def _result(name: str) -> str:
    return MEMORY_FACT if name in ("recall_memory", "fetch_record") else "done"
