"""The same conversation learns the same token estimate through the app (one
session) and through `newt -c -p` (one report a process): what the fit has seen
is kept with its weight per model, and each conversation's last report, so the
requests each front end sends are budgeted alike. Real processes, the fake
server (its prompt count: a quarter of the characters, plus message glue)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from newt.agent.session.chat_session import ChatSession
from tests.support.fake_openai import FakeOpenAI
from tests.support.session_helpers import MODEL, make_config, newt_cmd, run_turn

MESSAGES = [
    "Hello! I keep bees on the roof of our building.",
    "They made about twelve kilos of honey this summer, more than I expected.",
    "What should I do before the first frost? " + "Wrap, feed, check. " * 20,
    "Thanks.",
    "My neighbour wants a jar; I think I will give her two, she watered the plants.",
    "```python\nfor hive in range(3):\n    print(hive)\n```\nWhat does that print?",
]


def learned(db: Path) -> tuple[float, float, float]:
    con = sqlite3.connect(db)
    try:
        row = con.execute(
            "SELECT chars_per_token, per_message_tokens, per_reply_tokens"
            " FROM model_capabilities WHERE chars_per_token IS NOT NULL"
        ).fetchone()
    finally:
        con.close()
    assert row is not None, "nothing was learned"
    return float(row[0]), float(row[1]), float(row[2])


async def test_newt_c_p_learns_as_the_app_does(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    cli_home = tmp_path / "cli"
    for n, text in enumerate(MESSAGES):
        argv = ["--base-url", fake_openai.base_url, "--model", MODEL, *(["-c"] if n else [])]
        done = newt_cmd(*argv, "-p", text, home=cli_home)
        assert done.returncode == 0, done.stderr
    app_home = tmp_path / "app"
    app_home.mkdir()
    config = make_config(fake_openai.base_url)
    config.db_path = app_home / "newt.db"
    session = await ChatSession.open(config)
    try:
        for text in MESSAGES:
            await run_turn(session, text)
    finally:
        await session.close()
    by_cli, by_app = learned(cli_home / "newt.db"), learned(app_home / "newt.db")
    for mine, theirs in zip(by_cli, by_app, strict=True):
        assert abs(mine - theirs) <= 0.01 * max(abs(theirs), 1.0), (by_cli, by_app)
