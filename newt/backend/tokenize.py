"""A server's own count of a text's tokens, where the server offers one.

llama-server answers `POST /tokenize {"content": ...}` with the token ids.
newt's estimate (pieces times a learned ratio) is good on prose and code but
can be far off on text of a shape it has not seen (a 70 KB paste was
estimated at 5,217 tokens and counted at 13,311), and a message too large
for the window is refused only after the server has read it. So a large
message is counted by the server before it is sent, when the server can.
"""

from __future__ import annotations

import httpx

TOKENIZE_TIMEOUT_S = 20.0


async def server_count(base_url: str, text: str) -> int | None:
    """The tokens of `text` by the server at `base_url` (".../v1" or its root), or
    None when it has no /tokenize or does not answer."""
    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        async with httpx.AsyncClient(timeout=TOKENIZE_TIMEOUT_S) as client:
            response = await client.post(f"{root}/tokenize", json={"content": text})
        tokens = response.json().get("tokens") if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return len(tokens) if isinstance(tokens, list) else None
