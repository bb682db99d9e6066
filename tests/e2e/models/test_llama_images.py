"""An image for a text-only model, against the real llama-server.

llama-server without a multimodal projector (`--mmproj`) answers a chat request
carrying an `image_url` part with HTTP 500 and
`{"error": {"code": 500, "message": "image input is not supported - hint: if
this is unexpected, you may need to provide the mmproj", "type": "server_error"}}`
(build 11434, Gemma 3 270M), streamed or not. newt must tell that from a server
failure: no retries, the refusal remembered for the model and explained, the
turn's words kept.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from newt.agent import events as ev
from newt.agent.session.chat_session import ChatSession
from newt.agent.turn.attachments import AttachmentError
from newt.store.image_support import ImageSupportRepo
from tests.support.llama_server import LlamaServer
from tests.support.session_helpers import done_of, make_config, run_turn

pytestmark = pytest.mark.llama

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


async def test_a_text_only_llama_server_refuses_an_image_and_newt_remembers(
    llama_server: LlamaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dot.png").write_bytes(PNG)
    config = make_config(llama_server.base_url, "[recall]\nretained_token_budget = 0\n")
    session = await ChatSession.open(config)
    try:
        events = await run_turn(session, "What is in @dot.png?")
        done = done_of(events)
        errors = [e for e in events if isinstance(e, ev.TurnError)]
        assert done.status == "failed"
        assert errors[0].kind == "ImagesUnsupportedError"
        assert "image input is not supported" in errors[0].message
        assert "mmproj" in errors[0].message
        stored = (await session.log.history())[-1]
        assert stored.status == "failed" and stored.user.startswith("What is in @dot.png?")
        known = await ImageSupportRepo(session.store.db).get(session.base_url, session.model)
        assert known is not None and known[0] is False and "mmproj" in known[1]
        with pytest.raises(AttachmentError, match="does not accept images"):
            await run_turn(session, "And now @dot.png?")
        # the same server still answers text
        assert done_of(await run_turn(session, "Say hi.")).status == "complete"
    finally:
        await session.close()
