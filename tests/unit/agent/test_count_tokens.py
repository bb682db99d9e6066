"""newt's own llama-server counts a message that may not fit (its /tokenize); any
other server, or one without the route, leaves it to the estimate. The fake
server stands in for llama-server (`server_context_tokens` marks newt's own)."""

from __future__ import annotations

from tests.support.fake_openai import FakeOpenAI
from tests.support.session_helpers import close, open_session

PASTE = "All work and no play makes Jack a dull boy. " * 500


async def test_newt_s_own_server_counts_it(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai)
    try:
        fake_openai.routes[("POST", "/tokenize")] = (200, {"tokens": list(range(13_311))})
        estimate = session.estimate_tokens(PASTE)
        assert await session.count_tokens(PASTE) == estimate  # a server the user runs
        session.link.config.server_context_tokens = 4096
        assert await session.count_tokens(PASTE) == 13_311
        asked = [r for r in fake_openai.requests if r.path == "/tokenize"]
        assert asked[-1].body == {"content": PASTE}
        del fake_openai.routes[("POST", "/tokenize")]  # no such route: the estimate
        assert await session.count_tokens(PASTE) == estimate
    finally:
        await close(store, session)
