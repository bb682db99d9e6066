"""What the fake OpenAI server received: the last chat request's messages (in
process, or from a fake in its own process) and the tools a request offered."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support.fake_openai import FakeOpenAI


def last_request(fake: FakeOpenAI) -> str:
    return json.dumps(fake.chat_requests[-1].body["messages"], ensure_ascii=False)


def last_sent(base_url: str) -> str:
    root = base_url.removesuffix("/v1")
    found = httpx.get(f"{root}/__fake__/requests", timeout=10).json()
    bodies = [r["body"] for r in found if r["path"].endswith("/chat/completions")]
    return json.dumps(bodies[-1]["messages"], ensure_ascii=False)


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]
