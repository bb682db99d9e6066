"""A reply from a model newt runs leaves what it read and wrote a second here, which
the model lists then show instead of the catalogue's figure. The fake server stands
in for llama-server (`server_context_tokens` set marks a server newt runs)."""

from __future__ import annotations

import os
from pathlib import Path

from newt.local.models import speeds
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.session_helpers import close, open_session, run_turn


async def test_a_local_reply_keeps_its_speeds_for_the_model(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai, '[backend]\ntools = "off"\n')
    try:
        session.link.config.server_context_tokens = 4096
        fake_openai.script(
            Reply(text="A reply " * 30, prompt_read_s=1.0, prompt_tokens=400, delay_s=0.01)
        )
        await run_turn(session, "hello")
        cache = Path(os.environ["NEWT_LLAMA_CACHE"])
        here = speeds.measured(cache, session.link.config.backend.model)
        assert here is not None and 100 < here.read < 800 and here.write > 0
    finally:
        await close(store, session)
