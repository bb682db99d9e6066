"""The newest statement of a fact wins, judged on the request the server receives.

Each scenario tells a fact, changes it, then asks for it, against the fake
OpenAI-compatible server with newt's default recall at a 2,048-token window
(filler turns push the early turns out of the working set where a scenario
needs them pruned). What a correct answer needs must be in the request, and
when the old value is there too the new one must come after it (its place)
and, when recalled, carry its later day. No model is involved: this holds for
any model that reads the request.
"""

from __future__ import annotations

from typing import Any

import pytest

from newt.agent.session.chat_session import ChatSession
from newt.memory.types import COMPACTION_MARKER
from newt.recall.presentation import NEWER_ABOVE
from newt.recall.time_anchor import without_anchors
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.session_helpers import make_config, run_turn

CONFIG = '[memory]\ncontext_tokens = 2048\n[recall]\nembeddings = "{}"\n'
DAY = 86_400.0
START = 1_700_000_000.0

# Unrelated small talk, long enough that a dozen exchanges fill the working set.
FILLER = [
    "Tell me something about the history of {0}, in a few sentences please.",
    "What is a good way to get started with {0} as a complete beginner?",
    "Which books would you suggest for someone curious about {0}?",
    "Is {0} something people usually enjoy more in summer or in winter?",
]
TOPICS = [
    "origami",
    "sourdough baking",
    "birdwatching",
    "chess openings",
    "watercolour painting",
    "rock climbing",
    "jazz piano",
    "beekeeping",
    "astronomy",
    "pottery",
    "sailing",
    "calligraphy",
    "gardening",
    "knitting",
]


class Chat:
    """A conversation against the fake server; each reply is scripted by the
    user's words (the replies to filler are long, as models' are)."""

    def __init__(self, fake: FakeOpenAI, session: ChatSession) -> None:
        self.fake = fake
        self.session = session
        self.replies: dict[str, str] = {}
        self.clock = START
        fake.responder = self._respond

    def _respond(self, request: dict[str, Any]) -> Reply:
        last = request["messages"][-1]["content"]
        for said, reply in self.replies.items():
            if isinstance(last, str) and last.endswith(said):
                return Reply(text=reply)
        return Reply(text="Summary of the earlier talk.")

    async def say(self, text: str, reply: str = "Noted.", *, days: float = 0.02) -> None:
        self.clock += days * DAY
        self.session.store.db.clock = lambda at=self.clock: at
        self.replies = {text: reply}
        await run_turn(self.session, text)

    async def filler(self, count: int = 16) -> None:
        for i in range(count):
            topic = TOPICS[i % len(TOPICS)]
            reply = (
                f"{topic.capitalize()} is a rewarding pastime with a long tradition. "
                f"Most people begin with simple projects, join a local club, and read "
                f"one or two introductory guides before trying anything ambitious. "
                f"Patience matters more than equipment at first, and a friend who "
                f"shares the interest makes the early weeks far more enjoyable."
            )
            await self.say(FILLER[i % len(FILLER)].format(topic), reply)

    async def ask(self, question: str) -> list[dict[str, Any]]:
        queue = self.session.recall_parts.queue
        if queue is not None:  # with meaning on: every record embedded first
            assert await queue.wait_idle(120)
            cur = await self.session.store.db.conn.execute("SELECT count(*) FROM memory_vectors")
            row = await cur.fetchone()
            assert row is not None and row[0] > 0, "the meaning path embedded nothing"
        await self.say(question, "(answer)")
        return list(self.fake.chat_requests[-1].body["messages"])


def text_of(messages: list[dict[str, Any]]) -> str:
    """The request's text; a recalled line's relative times ("last month")
    carry their day in brackets, which the statement compared here has not."""
    return without_anchors("\n".join(str(m["content"]) for m in messages))


def history_of(messages: list[dict[str, Any]]) -> str:
    """The turns the request carries: every message but the system prompt, the
    compaction record (a summary, which may quote pruned turns) and the new one."""
    return "\n".join(
        str(m["content"])
        for m in messages[1:-1]
        if not str(m["content"]).startswith(COMPACTION_MARKER)
    )


def assert_newest_wins(messages: list[dict[str, Any]], old: str, new: str) -> None:
    """The new statement is in the request, and if the old one is too, the
    request shows which is newer: in the history or among the recalled lines
    by its place (later), or, recalled while the new one sits in the history,
    by the recalled block's header saying the history is more recent."""
    sent = text_of(messages)
    assert new in sent, f"the newest statement {new!r} is not in the request"
    if old not in sent:
        return
    history, block = history_of(messages), without_anchors(str(messages[-1]["content"]))
    if new in history and old not in history:
        assert NEWER_ABOVE in block, "a recalled old value is not marked as older"
        return
    assert sent.rindex(old) < sent.rindex(new), "the old value is read after the new one"


@pytest.fixture(params=["off", "auto"], ids=["words", "words+meaning"])
async def chat(fake_openai: FakeOpenAI, request: pytest.FixtureRequest) -> Any:
    """Each scenario by words alone and with the meaning path (MiniLM in process)."""
    session = await ChatSession.open(
        make_config(fake_openai.base_url, CONFIG.format(request.param))
    )
    try:
        yield Chat(fake_openai, session)
    finally:
        await session.close()


async def test_the_user_corrects_a_fact_in_other_words(chat: Chat) -> None:
    old = "My sister lives in Tromsø, up in the north of Norway."
    new = "Actually she moved to Bergen last month."
    await chat.say(old, "Tromsø is beautiful in winter.")
    await chat.filler()
    await chat.say(new, "Bergen is lovely too!", days=3)
    messages = await chat.ask("Where does my sister live now?")
    assert old not in history_of(messages)  # the fact came back through recall
    assert_newest_wins(messages, old, new)


async def test_the_assistant_corrects_itself(chat: Chat) -> None:
    await chat.say("What is the capital of Australia?", "The capital of Australia is Sydney.")
    await chat.say(
        "Are you sure about that?",
        "I was wrong, sorry: the capital of Australia is Canberra, not Sydney.",
    )
    await chat.filler()
    messages = await chat.ask("What was the capital of Australia again?")
    assert "Sydney." not in history_of(messages)  # both were pruned
    assert_newest_wins(
        messages,
        "The capital of Australia is Sydney.",
        "the capital of Australia is Canberra, not Sydney.",
    )


async def test_a_follow_up_about_the_replacement_keeps_the_recent_turns(chat: Chat) -> None:
    await chat.say("My dentist appointment is on Monday at 9.", "Good luck at the dentist!")
    await chat.filler()
    new = "The dentist moved my appointment to Friday at 2."
    await chat.say(new, "Friday at 2, got it.", days=1)
    messages = await chat.ask("What should I bring to it?")
    # "it" leans on the last turns: they must be in the request, as history
    assert new in history_of(messages)
    assert_newest_wins(messages, "My dentist appointment is on Monday at 9.", new)


async def test_a_fact_that_never_changed_comes_back(chat: Chat) -> None:
    fact = "My bike lock combination is 4140."
    await chat.say(fact, "I'll remember that.")
    await chat.filler()
    messages = await chat.ask("What is my bike lock combination?")
    assert fact not in history_of(messages)
    assert fact in text_of(messages)


async def test_recent_turns_hold_the_new_value_while_recall_brings_the_old(chat: Chat) -> None:
    old = "My gym locker code is 4417."
    new = "They changed my gym locker code to 8080 today."
    await chat.say(old, "Noted.")
    await chat.filler()
    await chat.say(new, "Okay, 8080.", days=2)
    messages = await chat.ask("What is my gym locker code?")
    assert new in history_of(messages)
    last = str(messages[-1]["content"])
    if old in last:  # recalled: the block says the conversation above is newer
        assert NEWER_ABOVE in last
    assert_newest_wins(messages, old, new)


async def test_the_correction_itself_was_pruned_too(chat: Chat) -> None:
    old = "My flight to Lisbon leaves from gate E33."
    new = "Update: the Lisbon flight now leaves from gate F12 instead."
    await chat.say(old, "Have a good trip!")
    await chat.filler(6)
    await chat.say(new, "Thanks for the update.", days=1)
    await chat.filler()
    messages = await chat.ask("Which gate does my flight to Lisbon leave from?")
    history = history_of(messages)
    assert old not in history and new not in history  # both came back through recall
    assert_newest_wins(messages, old, new)
    # the recalled lines carry their days: the correction's is the later one
    last = str(messages[-1]["content"])
    old_line = next(line for line in last.splitlines() if old in line)
    new_line = next(line for line in last.splitlines() if new in line)
    assert old_line.split(",")[0] != new_line.split(",")[0]


@pytest.fixture(params=["off", "auto"], ids=["words", "words+meaning"])
async def small_chat(fake_openai: FakeOpenAI, request: pytest.FixtureRequest) -> Any:
    """A 1,024-token window: the recalled block holds four or five short lines."""
    config = CONFIG.format(request.param).replace("2048", "1024")
    session = await ChatSession.open(make_config(fake_openai.base_url, config))
    try:
        yield Chat(fake_openai, session)
    finally:
        await session.close()


async def test_talked_over_at_length_then_corrected_once_both_pruned(chat: Chat) -> None:
    """The old value fills a whole sitting (each message matches the question
    better than the one-line correction does); the correction, said once
    weeks later, rides along and is read after every old line."""
    await talked_over_then_corrected(chat)


async def test_talked_over_then_corrected_in_a_small_window(small_chat: Chat) -> None:
    """The block holds fewer lines than the old sitting has: the correction
    still rides with the first old line packed (a statement goes only with
    its newer one), never left out for a sixth stale line."""
    await talked_over_then_corrected(small_chat)


async def talked_over_then_corrected(chat: Chat) -> None:
    old = [
        "My sister lives in Tromsø now.",
        "Yes, my sister loves Tromsø, she lives near the harbour.",
        "My sister says Tromsø winters are dark but she likes living there.",
        "My sister took me round Tromsø, where she lives, the whole weekend.",
        "My sister lives close to the Tromsø bridge.",
    ]
    for line in old:
        await chat.say(line, "Tromsø sounds lovely.", days=0.001)
    await chat.filler(6)
    new = "Actually my sister moved to Bergen last month."
    await chat.say(new, "Bergen is lovely too!", days=20)
    await chat.filler()
    messages = await chat.ask("Where does my sister live now?")
    history = history_of(messages)
    assert new not in history and not any(line in history for line in old)
    for line in old:
        assert_newest_wins(messages, line, new)


async def test_told_in_an_earlier_conversation_corrected_in_todays(chat: Chat) -> None:
    old = "My cat Mochi weighs 4 kilos."
    await chat.say(old, "A healthy weight!")
    await chat.session.conversations.new_conversation()
    new = "The vet said Mochi weighs 5 kilos now."
    await chat.say(new, "Mochi is growing.", days=30)
    messages = await chat.ask("How much does Mochi weigh?")
    assert new in history_of(messages)
    assert_newest_wins(messages, old, new)


async def test_told_in_an_earlier_conversation_corrected_in_todays_then_pruned(
    chat: Chat,
) -> None:
    old = "My cat Mochi weighs 4 kilos."
    await chat.say(old, "A healthy weight!")
    await chat.session.conversations.new_conversation()
    new = "The vet said Mochi weighs 5 kilos now."
    await chat.say(new, "Mochi is growing.", days=30)
    await chat.filler()
    messages = await chat.ask("How much does Mochi weigh?")
    assert new not in history_of(messages)
    assert_newest_wins(messages, old, new)
