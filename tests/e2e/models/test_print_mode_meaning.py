"""Recall by meaning through `newt -p`: every record a print run stores has its
vector when the run exits, and a question asked by `-p` is embedded within its
turn, so a fact worded apart from the question comes back. The real command,
the fake server, all-MiniLM-L6-v2 in process from the cache
(scripts/get_llama_server.sh keeps its wheel there)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.session_helpers import MODEL, newt_cmd

FACT = "My dog is called Pixel and he loves chasing seagulls on the beach."
CHATTER = (
    "Can you suggest a name for a new spreadsheet about quarterly budgets?",
    "What is a good way to store winter tyres?",
    "Give me a tip for keeping basil alive on a windowsill.",
    "How do I stop my glasses from fogging up?",
    "Which is heavier, a litre of water or a litre of olive oil?",
)
QUESTION = "What is the name of my puppy?"  # no word of the fact


def _counts(home: Path) -> tuple[int, int]:
    con = sqlite3.connect(home / "newt.db")
    try:
        records = con.execute("SELECT count(*) FROM memory_records").fetchone()[0]
        embedded = con.execute("SELECT count(DISTINCT record_id) FROM memory_vectors").fetchone()[0]
    finally:
        con.close()
    return records, embedded


def _ask(fake: FakeOpenAI, home: Path, *argv: str) -> str:
    fake.script(Reply(text="Noted."))
    done = newt_cmd("--base-url", fake.base_url, "--model", MODEL, *argv, home=home)
    assert done.returncode == 0, done.stderr
    messages = fake.chat_requests[-1].body["messages"]
    return "\n".join(str(m.get("content")) for m in messages)


def test_every_print_run_leaves_its_records_embedded_and_asks_by_meaning(
    fake_openai: FakeOpenAI,
    _isolated_home: Path,
    minilm_wheel: Path,
) -> None:
    home = _isolated_home
    _ask(fake_openai, home, "-p", FACT)
    for text in CHATTER:
        _ask(fake_openai, home, "-c", "-p", text)
        records, embedded = _counts(home)
        assert records >= 2 and embedded == records  # nothing left for later
    # a new conversation: the fact is not in its history, only in memory
    sent = _ask(fake_openai, home, "-p", QUESTION)
    assert "Pixel" in sent


def test_without_meaning_the_question_finds_nothing(
    fake_openai: FakeOpenAI, _isolated_home: Path
) -> None:
    # the control: by words alone the question shares nothing with the fact
    (_isolated_home / "config.toml").write_text('[recall]\nembeddings = "off"\n')
    _ask(fake_openai, _isolated_home, "-p", FACT)
    sent = _ask(fake_openai, _isolated_home, "-p", QUESTION)
    assert "Pixel" not in sent
    assert _counts(_isolated_home)[1] == 0
