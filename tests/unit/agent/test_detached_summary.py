"""Print mode's detached summary writer gives way to the next turn.

`newt -p` leaves the summary of what it folded to a detached
`newt --finish-summary ID`; a later turn on the same conversation stops it
while it is still asking the model (a one-slot server would make that turn
wait for the whole summary). Real processes, the real fake server.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from newt.agent.session.chat_session import ChatSession
from newt.agent.session.writer_handoff import stop_detached_writer, writer_pid_file
from newt.memory import record_summary
from newt.pid_claim import holder
from newt.store import Store
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.session_helpers import make_config, run_turn

SMALL = "[memory]\ncontext_tokens = 600\n[recall]\nretained_token_budget = 0\n"


async def _conversation_owing_a_summary(fake: FakeOpenAI) -> tuple[str, Path]:
    session = await ChatSession.open(make_config(fake.base_url, SMALL))
    try:
        for i in range(4):
            fake.script(Reply(text=f"answer {i}: " + "lorem ipsum " * 12))
            await run_turn(session, f"question {i}: " + "tell me more " * 10)
            await session.summaries.wait(5)  # summaries of these folds land (echo replies)
        fake.script(
            Reply(text="answer that compacts " + "words " * 40),
            Reply(text="cut off by close()", first_byte_delay_s=30),
        )
        await run_turn(session, "one more " + "words " * 45)
        assert session.summaries.running
        assert session.conversation is not None
        return session.conversation.id, session.store.db.path
    finally:
        await session.close()  # the last fold's summary is still owed


def _writer(fake: FakeOpenAI, conv_id: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "newt", "--finish-summary", conv_id]
    argv += ["--base-url", fake.base_url, "--model", "fake-model"]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


async def test_a_turn_stops_the_detached_writer_of_its_conversation(
    fake_openai: FakeOpenAI,
) -> None:
    conv_id, db_path = await _conversation_owing_a_summary(fake_openai)
    fake_openai.script(Reply(text="a summary that would take long", first_byte_delay_s=30))
    writer = _writer(fake_openai, conv_id)
    try:
        pid_file = writer_pid_file(db_path, conv_id)
        deadline = time.monotonic() + 20
        while holder(pid_file) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert holder(pid_file) == writer.pid  # found by its claim, not by a command line
        assert pid_file.read_text().strip() == str(writer.pid)
        assert oct(pid_file.stat().st_mode & 0o777) == "0o600"
        assert stop_detached_writer(db_path, conv_id)
        assert writer.wait(timeout=10) == 0  # a clean exit, not a crash
        assert not pid_file.exists()
    finally:
        writer.kill()
        writer.wait()
    async with await Store.open(db_path) as store:
        log = await store.turns.for_conversation(conv_id)
    assert "message(s) were removed" in record_summary(log[-1].user)  # the fallback stands


def test_a_stale_pid_file_never_signals_another_process(tmp_path: Path) -> None:
    db_path = tmp_path / "newt.db"
    writer_pid_file(db_path, "abc").write_text(str(os.getpid()))  # this pytest process
    assert not stop_detached_writer(db_path, "abc")
    writer_pid_file(db_path, "abc").write_text("not a pid")
    assert not stop_detached_writer(db_path, "abc")
    assert not stop_detached_writer(db_path, "no-file")
