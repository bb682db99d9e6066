"""End to end with a model that reads: Qwen2.5-Coder-1.5B-Instruct on
the real llama-server at a 1,024-token window, run as newt runs its own server.

A fact is told first; nine long turns fold it out of the window (checked); asked at
the end, the reply has it. Then it is corrected, five more long turns fold the correction
away too, and asked again the reply has the new value (read last among the recalled
lines). Every stored reply is an answer, never a tool call
written as text, and the compaction summaries the model writes hold the folded fact.
At 2,048 tokens eleven such turns never filled the budget, hence 1,024.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from newt.agent import events as ev
from newt.agent.local.managed_server import PROMPT_BATCH_TOKENS
from newt.agent.session.chat_session import ChatSession
from newt.agent.tools.builtin import TOOL_SCHEMAS
from newt.agent.tools.text_calls import parse
from newt.local.server import LocalLlamaServer, reply_token_cap
from newt.store import Store
from tests.support.llama_server import obtain_chat_model, obtain_llama_server
from tests.support.session_helpers import make_config, run_turn

pytestmark = pytest.mark.llama

WINDOW = 1024
LONG_TURNS = [
    "In about 80 words, explain how a lighthouse lens gathers and focuses light.",
    "In about 80 words, explain how a sourdough starter makes bread rise.",
    "In about 80 words, describe the water cycle from ocean to rain and back.",
    "In about 80 words, explain how the gears on a bicycle make climbing easier.",
    "In about 80 words, describe how honey bees turn nectar into honey.",
    "In about 80 words, explain why the sky looks blue during the day.",
    "In about 80 words, describe how a violin makes its sound.",
    "In about 80 words, explain how a compass finds north.",
    "In about 80 words, describe how bread dough rises in a warm kitchen.",
]
QUESTION = "Which city does my sister Ingrid live in? Answer with the city's name."


@pytest.fixture(scope="module")
def qwen() -> Iterator[LocalLlamaServer]:
    binary, _ = obtain_llama_server()
    batch = str(PROMPT_BATCH_TOKENS)
    server = LocalLlamaServer(
        obtain_chat_model(), binary=binary, ctx=WINDOW,
        extra_args=["-n", str(reply_token_cap(WINDOW)), "-b", batch, "-ub", batch,
                    "--temp", "0"],
    )  # fmt: skip
    server.start()
    yield server
    server.stop()


@pytest.fixture
async def session(qwen: LocalLlamaServer) -> AsyncIterator[ChatSession]:
    config = make_config(qwen.base_url)
    config.server_context_tokens = WINDOW  # as ManagedLocal sets it for its server
    config.server_reply_cap = reply_token_cap(WINDOW)
    config.backend.timeout_s = 600  # a loaded 2-core machine reads slowly
    assert config.db_path is not None
    store = await Store.open(config.db_path)
    chat = await ChatSession.open(config, store)
    try:
        yield chat
    finally:
        await chat.close()
        await store.close()


async def say(chat: ChatSession, text: str) -> str:
    events = await run_turn(chat, text)
    done = [e for e in events if isinstance(e, ev.TurnDone)]
    said = [e for e in events if isinstance(e, ev.TurnError | ev.Notice)]
    assert done and done[0].status == "complete", (text, said, done)
    calls = [f"{e.name}({e.arguments})" for e in events if isinstance(e, ev.ToolCallStarted)]
    print(f"> {text}\n  {calls}\n< {done[0].reply}\n  {done[0].stats}")  # -s, or on failure
    return done[0].reply


async def test_a_fact_folded_away_comes_back_and_its_correction_wins(
    session: ChatSession,
) -> None:
    tools = {t["function"]["name"] for t in TOOL_SCHEMAS}
    await say(session, "My sister Ingrid lives in Tromsø.")
    for text in LONG_TURNS:
        await say(session, text)
    status = session.memory_status()
    assert status.compactions >= 1 and status.resident_turns < status.total_turns, status
    first = await say(session, QUESTION)
    assert "troms" in first.lower(), first

    await say(session, "A correction: Ingrid has moved. My sister lives in Bergen now.")
    for text in LONG_TURNS[:5]:  # until the correction is folded away too
        await say(session, text)
    assert session.memory_status().resident_turns < 6
    second = await say(session, QUESTION)
    assert "bergen" in second.lower(), second

    history = await session.edits.history()
    replies = [t.assistant for t in history if t.kind == "turn"]
    for reply in replies:  # an answer (or none, after a save_note), never a call as text
        assert parse(reply, tools) is None and "<tool_response>" not in reply, reply
    assert await session.summaries.wait(600)
    summaries = [t.user for t in await session.edits.history() if t.kind == "compaction"]
    assert any("troms" in s.lower() or "ingrid" in s.lower() for s in summaries), summaries
