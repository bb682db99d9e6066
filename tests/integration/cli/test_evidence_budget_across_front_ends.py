"""The same conversation gets the same evidence budget through the app (one
session, many usage reports) and through `newt -c -p` (one report a process).

The budget is a share of what the system prompt and the tool schemas leave of
the window. Counted with the token estimate each process had learned so far,
the two front ends sent the same conversation different budgets (542 and 506
tokens on a LoCoMo conversation); counted in the steady unit
(`newt.memory.calibration.STEADY`) they are the same. Real processes, the fake
server (its prompt count: a quarter of the characters, plus message glue).
"""

from __future__ import annotations

import json
from pathlib import Path

from newt.agent import events as ev
from newt.agent.session.chat_session import ChatSession
from tests.support.fake_openai import FakeOpenAI
from tests.support.session_helpers import MODEL, make_config, newt_cmd, run_turn

CONFIG = "[memory]\ncontext_tokens = 2048\n"
MESSAGES = [
    "Hello! I keep bees on the roof of our building in Utrecht.",
    "They made about twelve kilos of honey this summer, more than I expected.",
    '{"hives": 3, "frames": [10, 10, 8], "queen_marked": true, "notes": "calm"}',
    "```python\nfor hive in range(3):\n    print(hive, 'ok')\n```\nWhat does that print?",
    "My neighbour Ilse wants a jar; I will give her two, she watered the plants.",
    "Wat doe ik vóór de eerste vorst? Inpakken, voeren, controleren. " * 6,
    "How much honey did my bees make, and where do I keep them?",
]


async def app_budgets(fake: FakeOpenAI, home: Path) -> list[int]:
    home.mkdir()
    config = make_config(fake.base_url, CONFIG)
    config.db_path = home / "newt.db"
    session = await ChatSession.open(config)
    budgets = []
    try:
        for text in MESSAGES:
            events = await run_turn(session, text)
            reports = [e.report for e in events if isinstance(e, ev.RetainedEvidence)]
            budgets.append(reports[0].budget_tokens if reports else 0)
    finally:
        await session.close()
    return budgets


def cli_budgets(fake: FakeOpenAI, home: Path) -> list[int]:
    home.mkdir()
    (home / "config.toml").write_text(CONFIG)
    budgets = []
    for n, text in enumerate(MESSAGES):
        argv = ["--base-url", fake.base_url, "--model", MODEL, *(["-c"] if n else [])]
        done = newt_cmd(*argv, "-p", text, "--json", home=home)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)["retained_evidence"] or {}
        budgets.append(int(report.get("budget_tokens", 0)))
    return budgets


async def test_the_app_and_newt_c_p_give_a_conversation_the_same_evidence_budget(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    by_app = await app_budgets(fake_openai, tmp_path / "app")
    by_cli = cli_budgets(fake_openai, tmp_path / "cli")
    asked = [(a, c) for a, c in zip(by_app, by_cli, strict=True) if a or c]
    assert len(asked) >= 3, (by_app, by_cli)  # recall had something to bring
    for app, cli in asked:
        assert abs(app - cli) <= 0.01 * app, (by_app, by_cli)
