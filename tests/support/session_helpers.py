"""Helpers for agent tests: a config pointing at the fake server, collecting events."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from newt.agent import events as ev
from newt.agent.session.chat_session import ChatSession
from newt.config import Config, load_config

MODEL = "fake-model"


def make_config(base_url: str, config_text: str = "", **kw: Any) -> Config:
    home = Path(os.environ["NEWT_HOME"])
    if config_text:
        (home / "config.toml").write_text(config_text)
    return load_config(base_url=base_url, model=MODEL, **kw)


async def run_turn(session: ChatSession, text: str) -> list[ev.AgentEvent]:
    return [e async for e in session.send(text)]


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
