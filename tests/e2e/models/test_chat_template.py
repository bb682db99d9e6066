"""The prompt newt's own llama-server renders for Qwen2.5-Coder-1.5B with newt's
tools, read back from the server (`POST /apply-template`): the call's shape in
single braces, as the corrected template file has it, never the doubled braces
of the model's own template (which the model copied into its replies)."""

from __future__ import annotations

import httpx
import pytest

from newt.agent.local.managed_server import managed_server
from newt.agent.tools.builtin import TOOL_SCHEMAS
from tests.support.llama_server import obtain_chat_model, obtain_llama_server

pytestmark = pytest.mark.llama


def test_the_rendered_prompt_shows_a_call_in_single_braces() -> None:
    binary, _ = obtain_llama_server()
    server = managed_server(obtain_chat_model(), binary=binary)
    assert "--chat-template-file" in server.extra_args
    server.start()
    try:
        body = {"messages": [{"role": "user", "content": "hi"}], "tools": TOOL_SCHEMAS}
        prompt = httpx.post(f"{server.root_url}/apply-template", json=body, timeout=120).json()[
            "prompt"
        ]
    finally:
        server.stop()
    assert '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>' in prompt
    assert "{{" not in prompt  # the schemas end in "}}}" as JSON does; nothing opens two
    assert '{"type": "function", "function": {"name": "recall_memory"' in prompt
