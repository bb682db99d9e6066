"""Helpers for session tests: a config pointing at the fake server, a session on its
own store, collecting events, a turn straight into the store, the `newt` command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from newt.agent import events as ev
from newt.agent.session.chat_session import ChatSession
from newt.config import Config, load_config
from newt.store import Store
from tests.support.fake_openai import FakeOpenAI

MODEL = "fake-model"


def make_config(base_url: str, config_text: str = "", **kw: Any) -> Config:
    home = Path(os.environ["NEWT_HOME"])
    if config_text:
        (home / "config.toml").write_text(config_text)
    return load_config(base_url=base_url, model=MODEL, **kw)


async def run_turn(session: ChatSession, text: str) -> list[ev.AgentEvent]:
    return [e async for e in session.turns.send(text)]


def reply_of(events: list[ev.AgentEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, ev.TextDelta))


def done_of(events: list[ev.AgentEvent]) -> ev.TurnDone:
    done = [e for e in events if isinstance(e, ev.TurnDone)]
    assert len(done) == 1, events
    return done[0]


def newt_cmd(
    *args: str,
    home: Path,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    full = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "NEWT_CONFIG")
    }
    full["NEWT_HOME"] = str(home)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "newt", *args],
        capture_output=True,
        text=True,
        env=full,
        input=stdin,
        timeout=timeout,
    )


async def open_session(fake: FakeOpenAI, config_text: str = "") -> tuple[Store, ChatSession]:
    """A session on its own store (the caller closes both: `close`)."""
    config = make_config(fake.base_url, config_text)
    assert config.db_path is not None
    store = await Store.open(config.db_path)
    session = await ChatSession.open(config, store)
    return store, session


async def close(store: Store, session: ChatSession) -> None:
    await session.close()
    await store.close()


async def add_turn(store: Store, user: str, assistant: str = "Noted.") -> str:
    """One finished turn in a new conversation, straight into the store: its record key."""
    conv = await store.conversations.create()
    turn_id = await store.turns.add_pending(conv.id, user)
    await store.turns.complete(turn_id, assistant)
    return f"t{turn_id}"
