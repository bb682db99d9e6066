"""A summary owed lands while turns keep coming, and until it lands the record
quotes the user's removed words.

Real ChatSession, real SQLite, the fake OpenAI server answering summary
requests slowly: a busy one-slot server, where a summary takes longer than the
pause between a reply and the next message. Before, each turn preempted the
summary in flight and none ever landed.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from newt.agent import events as ev
from newt.agent.session.chat_session import ChatSession
from newt.agent.session.writer_handoff import writer_pid_file
from newt.memory import record_summary
from newt.memory.compaction import base_summary, owed_folds, unsummarized_messages
from tests.support.fake_openai import ErrorReply, FakeOpenAI, RecordedRequest, Reply
from tests.support.session_helpers import done_of, make_config, run_turn
from tests.support.summary_requests import is_summary_request

SMALL = "[memory]\ncontext_tokens = 600\n[recall]\nretained_token_budget = 0\n"
SUMMARY = "SUMMARY: trip plans."
GAP_S = 0.2  # the pause between a reply and the next message
SUMMARY_S = 1.0  # what a summary takes on the busy server: longer than the pause


class SlowSummaries(FakeOpenAI):
    """Summary requests get `summary` after `delay_s`; chat turns the queue or the echo."""

    def __init__(self, delay_s: float, summary: Reply | ErrorReply | None = None) -> None:
        super().__init__()
        self.summary = summary or Reply(text=SUMMARY, first_byte_delay_s=delay_s)
        self._current = threading.local()  # each request has its own handler thread

    def _record(self, request: RecordedRequest) -> None:
        self._current.body = request.body
        super()._record(request)

    def _next_reply(self) -> Reply | ErrorReply:
        if is_summary_request(getattr(self._current, "body", None)):
            return self.summary
        return super()._next_reply()


@pytest.fixture
def slow_server() -> Iterator[SlowSummaries]:
    server = SlowSummaries(SUMMARY_S).start()
    try:
        yield server
    finally:
        server.stop()


def user_message(i: int) -> str:
    return f"Message {i}: my locker code at harbor {i} is {4000 + i}. " + "Tell me more. " * 12


def record_of(request: RecordedRequest) -> str:
    """The compaction record a chat request carried ("" when none)."""
    for message in request.body["messages"]:
        content = str(message.get("content"))
        if message["role"] == "user" and content.startswith("[CONTEXT COMPACTION"):
            return content
    return ""


async def compaction_rows(session: ChatSession) -> list[str]:
    assert session.conversation is not None
    log = await session.store.turns.for_conversation(session.conversation.id)
    return [t.user for t in log if t.kind == "compaction"]


async def test_a_summary_owed_lands_while_turns_keep_coming(slow_server: SlowSummaries) -> None:
    session = await ChatSession.open(make_config(slow_server.base_url, SMALL))
    try:
        for i in range(10):
            assert done_of(await run_turn(session, user_message(i))).status == "complete"
            await asyncio.sleep(GAP_S)  # shorter than a summary: the next turn finds it running
        rows = await compaction_rows(session)
    finally:
        await session.close()
    turn_requests = [r for r in slow_server.chat_requests if r.body.get("stream") and record_of(r)]
    assert len(turn_requests) >= 6  # the chat compacted early and kept compacting
    landed = [r for r in rows if (base_summary(r) or "").startswith(SUMMARY)]
    # summaries land while the chat goes on...
    assert len(landed) >= 3
    # ...and no request carries a record owing more than two fold steps: the
    # one before the turn (it gives way) and the turn's own pre-send fold
    assert max(owed_folds(record_of(r)) for r in turn_requests) <= 2
    # the later requests all carry a model-written summary
    assert all(base_summary(record_of(r)) for r in turn_requests[3:])


async def test_the_owed_record_quotes_the_users_removed_words() -> None:
    """Summaries failing outright: the record alone must tell a later question
    what the user said, within the record's share of the budget."""
    server = SlowSummaries(0, ErrorReply(500, {"error": {"message": "busy"}})).start()
    config = "[memory]\ncontext_tokens = 1000\n[recall]\nretained_token_budget = 0\n"
    session = await ChatSession.open(make_config(server.base_url, config))
    try:
        sent = [
            "I fly to Lisbon on Friday from gate E33. " + "Some chatter. " * 20,
            "My sister Ada turns seven next week. " + "More chatter. " * 20,
            "Our team meeting moved to 9:45. " + "Even more chatter. " * 20,
            "The cat's vet appointment is on the 14th. " + "Chatter again. " * 20,
            "What should I pack?",
        ]
        for text in sent:
            await run_turn(session, text)
        await session.summaries.wait(5)
        rows = await compaction_rows(session)
        budget = session.memory_status().budget
    finally:
        await session.close()
        server.stop()
    assert rows
    body = record_summary(rows[-1])
    assert base_summary(rows[-1]) is None  # no summary was ever written
    assert unsummarized_messages(rows[-1]) >= 4
    assert "What the user said in them:" in body
    assert "- I fly to Lisbon on Friday from gate E33." in body  # their words, shortened
    assert "chatter" in body and "…" in body
    assert "Summary generation was unavailable" not in body
    assert session.estimate_tokens(body) <= budget * 0.25


def _owing_two_folds(base_url: str) -> tuple[str, Any]:
    """A conversation whose record owes two fold steps (every summary failed)."""

    async def build() -> tuple[str, Any]:
        session = await ChatSession.open(make_config(base_url, SMALL))
        try:
            for i in range(8):
                await run_turn(session, user_message(i))
                await session.summaries.wait(5)
                record = getattr(session.provider, "record", None) or ""
                if owed_folds(record) >= 2:
                    assert session.conversation is not None
                    return session.conversation.id, session.store.db.path
            raise AssertionError("never owed two folds")
        finally:
            await session.close()

    return asyncio.run(build())


def test_print_mode_waits_for_a_detached_writer_of_an_overdue_summary() -> None:
    """`newt -c -p` after another whose detached writer is still writing an
    overdue summary: the turn waits for it (it lands, the request carries it)
    rather than stopping it and leaving the record owing."""
    failing = SlowSummaries(0, ErrorReply(500, {"error": {"message": "busy"}})).start()
    try:
        conv_id, db_path = _owing_two_folds(failing.base_url)
    finally:
        failing.stop()
    server = SlowSummaries(2.0).start()
    try:
        argv = [sys.executable, "-m", "newt", "--finish-summary", conv_id]
        argv += ["--base-url", server.base_url, "--model", "fake-model"]
        writer = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            pid_file = writer_pid_file(db_path, conv_id)
            deadline = time.monotonic() + 20
            while not pid_file.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert pid_file.exists()

            async def next_turn() -> list[ev.AgentEvent]:
                session = await ChatSession.open(make_config(server.base_url, SMALL))
                try:
                    await session.conversations.resume(conv_id)
                    return await run_turn(session, "and one more question")
                finally:
                    await session.close()

            events = asyncio.run(next_turn())
            assert writer.wait(timeout=10) == 0
        finally:
            writer.kill()
            writer.wait()
    finally:
        server.stop()
    assert done_of(events).status == "complete"
    turn = [r for r in server.chat_requests if r.body.get("stream")][-1]
    assert (base_summary(record_of(turn)) or "").startswith(SUMMARY)
    assert server.disconnects == 0  # the writer was not stopped


async def test_a_failed_overdue_summary_holds_up_no_turn_again_until_the_next_step() -> None:
    """A model that writes nothing (slowly): the record keeps owing, and once
    settling has failed for these steps, the next turn does not wait again."""
    server = SlowSummaries(0, Reply(text="", first_byte_delay_s=SUMMARY_S)).start()
    session = await ChatSession.open(make_config(server.base_url, SMALL))
    try:
        for i in range(8):
            await run_turn(session, user_message(i))
            await session.summaries.wait(5)
            if getattr(session.provider, "summary_overdue", False):
                break
        assert getattr(session.provider, "summary_overdue", False)
        started = time.monotonic()
        assert not await session.summaries.settle(10)  # tried, and it wrote nothing
        assert time.monotonic() - started >= SUMMARY_S
        started = time.monotonic()
        assert not await session.summaries.settle(10)  # the same steps: not again
        assert time.monotonic() - started < SUMMARY_S / 2
    finally:
        await session.close()
        server.stop()
