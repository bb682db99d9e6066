"""A chat to forget from, and what newt.db (with its -wal and -shm) still holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from newt.agent.session.chat_session import ChatSession
from tests.support.fake_openai import ErrorReply, FakeOpenAI, Reply
from tests.support.session_helpers import make_config, run_turn
from tests.support.summary_requests import is_summary_request

SECRET = "QUIXOTICPLUM77"
CONTROL = "ZEBRAPAVEMENT31"
SMALL = '[memory]\ncontext_tokens = 2048\n[recall]\nembeddings = "{}"\n'


def file_bytes(db: Path) -> dict[str, bytes]:
    out = {}
    for suffix in ("", "-wal", "-shm"):
        path = Path(str(db) + suffix)
        if path.exists():
            out[suffix or "db"] = path.read_bytes()
    return out


def holds(db: Path, text: str) -> list[str]:
    """The files (db, -wal, -shm) that hold `text` in any case."""
    needle = text.lower().encode()
    return [name for name, data in file_bytes(db).items() if needle in data.lower()]


def sent(fake: FakeOpenAI) -> str:
    return json.dumps(fake.chat_requests[-1].body["messages"], ensure_ascii=False)


class Chat:
    def __init__(self, fake: FakeOpenAI, session: ChatSession) -> None:
        self.fake, self.session = fake, session
        self.summary: Reply | ErrorReply = Reply(text="They talked about hobbies.")
        fake.responder = self._respond

    def _respond(self, request: dict[str, Any]) -> Reply | ErrorReply:
        if is_summary_request(request):
            return self.summary
        last = str(request["messages"][-1]["content"])
        said = last if len(last) < 120 else last[-60:]  # a message, or a capsule block's end
        return Reply(text=f"Noted: {said} " + "Sure thing, here is more about it. " * 14)

    async def say(self, text: str) -> None:
        await run_turn(self.session, text)

    async def filler(self, n: int) -> None:
        for i in range(n):
            await self.say(f"Tell me a few things about hobby number {i} and why people like it.")

    async def embedded(self) -> None:
        queue = self.session.recall_parts.queue
        if queue is not None:
            assert await queue.wait_idle(120)


async def open_chat(fake: FakeOpenAI, embeddings: str = "off") -> Chat:
    session = await ChatSession.open(make_config(fake.base_url, SMALL.format(embeddings)))
    return Chat(fake, session)
