"""The fake server as another process uses it: `python -m tests.support.fake_openai`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from newt.backend.client import ChatClient
from newt.backend.errors import ContextLengthExceededError, RateLimitedError
from newt.backend.types import ChatResult, StreamText
from tests.support.paths import REPO


def start(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fake_openai", "--port", "0", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # "fake_openai listening on http://127.0.0.1:PORT/v1"
    assert "listening on" in line, line
    return proc, line.split()[-1]


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[str]:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {"type": "error", "status": 429, "body": {"error": {"message": "busy"}}},
                {"type": "reply", "text": "scripted", "chunk_size": 4},
            ]
        )
    )
    proc, base_url = start("--tokens-per-reply", "5", "--n-ctx", "2048", "--script", str(script))
    try:
        yield base_url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_standalone_script_then_generated_replies(standalone: str):
    root = standalone.removesuffix("/v1")
    assert httpx.get(f"{root}/props").json()["default_generation_settings"]["n_ctx"] == 2048
    async with ChatClient(standalone, "m", max_retries=0) as client:
        with pytest.raises(RateLimitedError):
            await client.complete([{"role": "user", "content": "a"}])
        assert (await client.complete([{"role": "user", "content": "a"}])).text == "scripted"
        events = [e async for e in client.stream_chat([{"role": "user", "content": "b"}])]
    *deltas, result = events
    assert isinstance(result, ChatResult)
    assert len(deltas) == 5 and all(isinstance(d, StreamText) for d in deltas)
    assert result.usage is not None and result.usage.completion_tokens == 5


async def test_control_endpoints_script_and_show_requests(standalone: str):
    root = standalone.removesuffix("/v1")
    overflow = {"type": "overflow", "backend": "vllm", "prompt_tokens": 5000}
    httpx.post(f"{root}/__fake__/script", json=[overflow]).raise_for_status()
    async with ChatClient(standalone, "m", max_retries=0) as client:
        with pytest.raises(RateLimitedError):  # the file's script comes first
            await client.complete([{"role": "user", "content": "x"}])
        await client.complete([{"role": "user", "content": "x"}])
        with pytest.raises(ContextLengthExceededError) as info:
            await client.complete([{"role": "user", "content": "x"}])
    assert (info.value.prompt_tokens, info.value.context_window) == (5000, 4096)
    recorded = httpx.get(f"{root}/__fake__/requests").json()
    chats = [r for r in recorded if r["path"] == "/v1/chat/completions"]
    assert len(chats) == 3
    assert chats[0]["body"]["messages"] == [{"role": "user", "content": "x"}]
