"""Whether a model newt runs itself can call tools at all: one small request, remembered.

A model that neither makes a protocol tool call nor writes one as text when it
is plainly asked to (SmolLM2-135M, base models) is better off without tools: their
schemas take a tenth of a small window and it answers them with noise. So
before the first turn that would offer tools to the llama-server newt manages,
`probe_tool_calls` asks it to call a made-up tool (a few dozen tokens) and the
verdict is kept in the capability cache under the model's name
(`LOCAL_SERVERS` instead of the server's URL, whose port is new every run), so
each model is asked once. A server the user runs is not probed: it gets tools
until it refuses them (turn_rounds.py).
"""

from __future__ import annotations

from typing import Any

from newt.agent.tools.text_calls import parse
from newt.backend.client import ChatClient
from newt.backend.errors import BackendError, ToolsUnsupportedError

LOCAL_SERVERS = "newt --local"  # the capability cache's base_url for models newt runs
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


async def probe_tool_calls(client: ChatClient) -> bool | None:
    """True when the model calls the probe tool (either way), False when it does not
    or the server refuses tools; None when the request failed (ask again later)."""
    try:
        result = await client.complete(
            PROBE_MESSAGES, tools=[PROBE_SCHEMA], max_tokens=PROBE_MAX_TOKENS, temperature=0.0
        )
    except ToolsUnsupportedError:
        return False
    except BackendError:
        return None
    if any(call.name == PROBE_TOOL for call in result.tool_calls):
        return True
    return parse(result.text, {PROBE_TOOL}) is not None
