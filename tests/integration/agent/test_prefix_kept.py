"""Once the window fills, a chat request still starts as the one before it did.

Real ChatSession, real SQLite, the fake OpenAI server. A server keeps the
prefix of the last request it read (llama-server's prompt cache, vLLM, hosted
APIs); a request that changes near its start is read again whole. Folding just
under the budget changed the record at the head of the history every turn; a
fold down to the low-water mark (`[memory] fold_to`) leaves the next turns to
append, and the fold's summary lands before the next request, so the record
changes once per fold.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from newt.agent import events as ev
from newt.agent.session.chat_session import ChatSession
from newt.memory.compaction import base_summary
from tests.support.fake_openai import ErrorReply, FakeOpenAI, RecordedRequest, Reply
from tests.support.session_helpers import done_of, make_config, run_turn
from tests.support.summary_requests import is_summary_request

TURNS = 30
BOATS = [f"boat-{n}-{chr(97 + n % 26)}wind" for n in range(TURNS)]
SUMMARY = "SUMMARY: the user keeps lockers at several harbors."


def config_text(fold_to: float) -> str:
    return (
        "[memory]\ncontext_tokens = 1600\n"
        f"fold_to = {fold_to}\n"
        "[recall]\nretained_token_budget = 0\n"
    )


class Summaries(FakeOpenAI):
    """Summary requests get SUMMARY; chat turns the echo."""

    def __init__(self) -> None:
        super().__init__()
        self._current = threading.local()

    def _record(self, request: RecordedRequest) -> None:
        self._current.body = request.body
        super()._record(request)

    def _next_reply(self) -> Reply | ErrorReply:
        if is_summary_request(getattr(self._current, "body", None)):
            return Reply(text=SUMMARY)
        return super()._next_reply()


@pytest.fixture
def server() -> Iterator[Summaries]:
    fake = Summaries().start()
    try:
        yield fake
    finally:
        fake.stop()


def user_message(i: int) -> str:
    return f"Message {i}: my locker at harbor {i} has code {4000 + i}. " + "Some more words. " * 8


def record_of(request: RecordedRequest) -> str:
    for message in request.body["messages"]:
        content = str(message.get("content"))
        if message["role"] == "user" and content.startswith("[CONTEXT COMPACTION"):
            return content
    return ""


def appends(before: RecordedRequest, after: RecordedRequest) -> bool:
    """`after` starts with every message of `before` (its reply and a new message follow)."""
    old, new = before.body["messages"], after.body["messages"]
    return new[: len(old)] == old


async def play(server: Summaries, fold_to: float) -> list[RecordedRequest]:
    session = await ChatSession.open(make_config(server.base_url, config_text(fold_to)))
    try:
        for i in range(TURNS):
            assert done_of(await run_turn(session, user_message(i))).status == "complete"
    finally:
        await session.close()
    return [r for r in server.chat_requests if r.body.get("stream")]


async def test_after_a_fold_the_next_turns_append_to_an_unchanged_request(
    server: Summaries,
) -> None:
    chats = await play(server, 0.6)
    filled = next(i for i, r in enumerate(chats) if record_of(r))
    after = list(zip(chats[filled:], chats[filled + 1 :], strict=False))
    changed = [b for a, b in after if not appends(a, b)]
    # the record changes at a fold only: most turns after the window filled append
    assert len(after) >= 15
    assert len(changed) * 3 <= len(after), (len(changed), len(after))
    # and each request that starts afresh carries the fold's summary, landed before it
    assert all(base_summary(record_of(r)) == SUMMARY for r in changed)
    # each summary request starts as the chat request before it (system message,
    # tools), so a one-slot server keeps that start for the next chat request
    requests = server.chat_requests
    summaries = [i for i, r in enumerate(requests) if is_summary_request(r.body)]
    assert summaries
    for i in summaries:
        chat = requests[i - 1].body
        assert requests[i].body["messages"][0] == chat["messages"][0]
        assert requests[i].body["tools"] == chat["tools"]  # offered at this window
        assert requests[i].body["tool_choice"] == "none"  # a summary, not a call


async def test_folding_just_enough_changes_the_request_every_turn(server: Summaries) -> None:
    chats = await play(server, 1.0)
    filled = next(i for i, r in enumerate(chats) if record_of(r))
    after = list(zip(chats[filled:], chats[filled + 1 :], strict=False))
    changed = [b for a, b in after if not appends(a, b)]
    # a fold each turn or two (and its summary landing with the next request)
    assert len(changed) * 2 >= len(after), (len(changed), len(after))


async def test_with_recalled_lines_the_fold_happens_at_a_turns_end(
    server: Summaries, tmp_path: Path
) -> None:
    """Capsules take room in each request beside the history. Folding at a
    turn's end only down to the budget left the pre-send guard to fold before
    most requests once the window filled: that request started afresh, and
    its summary, landing after it, changed the next one's start too."""
    config = (
        "[memory]\ncontext_tokens = 2400\nfold_to = 0.6\n[recall]\nretained_token_budget = 400\n"
    )
    settings = make_config(server.base_url, config)
    settings.db_path = tmp_path / "newt.db"  # recall reads the stored turns
    session = await ChatSession.open(settings)
    reasons: list[str] = []
    try:
        for i in range(TURNS):
            text = f"{user_message(i)} My boat there is the {BOATS[i]}."
            if i >= 12:  # asks after a boat named long before: recall brings it
                text = "Some more words. " * 8 + f"My boat is the {BOATS[i - 12]}: which harbor?"
            events = await run_turn(session, text)
            assert done_of(events).status == "complete"
            reasons += [e.reason for e in events if isinstance(e, ev.Compacted)]
    finally:
        await session.close()
    chats = [r for r in server.chat_requests if r.body.get("stream")]
    recalled = [r for r in chats if "Recalled from earlier" in str(r.body["messages"][-1])]
    assert len(recalled) >= 5, len(recalled)
    assert reasons.count("budget") >= 2, reasons
    assert reasons.count("guard") <= 1, reasons
