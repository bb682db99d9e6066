"""llama-server's prompt progress through the client, and the pace newt makes of it:
the mock backend (tests/support/mock_backend.py) sends `prompt_progress` chunks as
llama-server does when a request carries `return_progress`."""

from __future__ import annotations

from newt.agent import events as ev
from newt.agent.turn.reply_pace import PaceMeter
from newt.backend.client import ChatClient
from newt.backend.types import ChatResult, PromptProgress, StreamText
from newt.ui.widgets.reply_parts import pace_text
from tests.support.fake_openai import Reply
from tests.support.mock_backend import MockBackend

MESSAGES = [{"role": "user", "content": "hello"}]


async def collect(client: ChatClient) -> list[object]:
    return [item async for item in client.stream_chat(MESSAGES)]


async def test_the_client_asks_for_progress_and_hands_it_on_before_the_text(
    mock_backend: MockBackend,
) -> None:
    mock_backend.script(Reply(text="hi", prompt_read_s=0.2, progress_steps=4, prompt_tokens=1000,
                              cached_tokens=200))  # fmt: skip
    async with ChatClient(
        mock_backend.base_url, "m", prompt_progress=True, transport=mock_backend.transport
    ) as client:
        items = await collect(client)
    assert mock_backend.chat_requests[-1].body["return_progress"] is True
    progress = [i for i in items if isinstance(i, PromptProgress)]
    assert [(p.total, p.cache, p.processed) for p in progress] == [
        (1000, 200, 400), (1000, 200, 600), (1000, 200, 800), (1000, 200, 1000),
    ]  # fmt: skip
    first_text = next(n for n, i in enumerate(items) if isinstance(i, StreamText))
    assert items.index(progress[-1]) < first_text
    assert isinstance(items[-1], ChatResult) and items[-1].text == "hi"


async def test_a_server_not_asked_gets_no_unknown_field(mock_backend: MockBackend) -> None:
    mock_backend.script(Reply(text="hi", prompt_read_s=0.1))
    async with ChatClient(mock_backend.base_url, "m", transport=mock_backend.transport) as client:
        items = await collect(client)
    assert "return_progress" not in mock_backend.chat_requests[-1].body
    assert not [i for i in items if isinstance(i, PromptProgress)]


def test_the_pace_from_the_servers_report_and_from_an_estimate() -> None:
    meter = PaceMeter(prompt_tokens=1500, prompt_rate=100.0)
    start = meter.start()
    assert start.left_s == 15.0
    assert pace_text(start, 0.2) == ""  # a quick server: nothing to say
    assert pace_text(start, 6.0) == "Reading the prompt (~1,500 tokens): 6 s, about 9 s left"
    reported = meter.progress(PromptProgress(total=1700, cache=200, processed=700, time_ms=5000))
    assert (reported.prompt_tokens, reported.read_tokens, reported.left_s) == (1500, 500, 10.0)
    text = pace_text(reported, reported.waited_s)
    assert text.startswith("Reading the prompt: 500 of 1,500 tokens") and "about 10 s left" in text
    assert meter.measured_rate(1700, 200) == 100.0  # the server's own pace
    unknown = PaceMeter(prompt_tokens=None, prompt_rate=None).start()
    assert pace_text(unknown, 3.0) == "Waiting for the first token: 3 s"
    slow = ev.ReplyPace(16.0, first_token_s=15.8, tokens=40, per_s=27.3)
    assert pace_text(slow, 16.0) == "First token after 15.8 s · 27.3 tokens/s"
    assert pace_text(ev.ReplyPace(0.1, first_token_s=0.05, tokens=3, per_s=80.0), 0.1) == ""
