"""A tool call written as text is run as a call, never shown or stored as the answer:
the parser, the streaming gate, and whole turns against the fake
server emitting each textual form."""

from __future__ import annotations

import pytest

from newt.agent import events as ev
from newt.agent.tools.text_calls import ToolTextGate, parse
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.session_helpers import close, open_session, reply_of, run_turn

TOOLS = {"save_note", "recall_memory", "fetch_record"}
NOTE = (
    '{"name": "save_note", "arguments": {"action": "add", "content": "User is allergic to nuts"}}'
)
FORMS = {
    "fenced json": f"```json\n{NOTE}\n```",
    "fenced, no language": f"```\n{NOTE}\n```\n",
    "bare": f"  {NOTE}",
    "qwen's tag": f"<tool_call>\n{NOTE}\n</tool_call>",
    "qwen's tools tag": f"<tools>\n{NOTE}\n</tools>\n",
    "openai's shape": (
        '{"type": "function", "function": {"name": "save_note", '
        '"arguments": "{\\"action\\": \\"add\\", \\"content\\": \\"User is allergic to nuts\\"}"}}'
    ),
    "parameters, then a comment": (
        '```json\n{"name": "save_note", "parameters": {"action": "add", '
        '"content": "User is allergic to nuts"}}\n```\nI will save that.'
    ),
}


@pytest.mark.parametrize("form", FORMS)
def test_each_textual_form_is_a_call(form: str) -> None:
    found = parse(FORMS[form], TOOLS)
    assert found is not None and [c.name for c in found.calls] == ["save_note"]
    assert found.calls[0].arguments == {"action": "add", "content": "User is allergic to nuts"}


@pytest.mark.parametrize(
    "text",
    [
        "Sure! " + FORMS["fenced json"],  # prose first: an answer that shows a call
        '```json\n{"name": "delete_everything", "arguments": {}}\n```',  # not offered
        '{"name": "Ada", "age": 36}',  # JSON the user asked for
        "```python\nprint('hi')\n```",
        '```json\n{"name": "save_note", "arguments": "not json"}\n```',
        "[1] is a footnote",
    ],
)
def test_what_is_not_a_call_stays_an_answer(text: str) -> None:
    assert parse(text, TOOLS) is None
    gate = ToolTextGate(TOOLS)
    shown = "".join(gate.feed(ch) for ch in text)
    found, rest = gate.finish()
    assert found is None and shown + rest == text


def test_the_gate_holds_a_call_back_to_the_end_and_lets_prose_through_at_once() -> None:
    gate = ToolTextGate(TOOLS)
    assert all(gate.feed(ch) == "" for ch in FORMS["fenced json"])
    found, rest = gate.finish()
    assert found is not None and rest == ""
    prose = ToolTextGate(TOOLS)
    assert prose.feed("Your") == "Your" and prose.feed(" sister") == " sister"
    code = ToolTextGate(TOOLS)
    assert code.feed("```js") == "" and code.feed("\n") == "```js\n"  # could be json
    assert ToolTextGate(TOOLS).feed("```py") == "```py"
    assert ToolTextGate(set()).feed("{") == "{"  # no tools offered: nothing is held


@pytest.mark.parametrize("form", FORMS)
async def test_a_call_written_as_text_runs_and_is_never_shown_or_stored(
    fake_openai: FakeOpenAI, form: str
) -> None:
    store, session = await open_session(fake_openai)
    try:
        fake_openai.script(Reply(text=FORMS[form], chunk_size=2), Reply(text="Noted: no nuts."))
        events = await run_turn(session, "I'm allergic to nuts, remember that")
        shown = "".join(e.text for e in events if isinstance(e, ev.TextDelta))
        assert shown == "Noted: no nuts." and reply_of(events) == "Noted: no nuts."
        assert [e.name for e in events if isinstance(e, ev.ToolCallStarted)] == ["save_note"]
        assert await store.notes.list() == ["User is allergic to nuts"]
        second = fake_openai.chat_requests[-1].body["messages"]
        assert second[-2]["role"] == "assistant" and second[-2]["content"] is None
        assert second[-2]["tool_calls"][0]["function"]["name"] == "save_note"
        assert second[-1] == {
            "role": "tool",
            "tool_call_id": second[-2]["tool_calls"][0]["id"],
            "content": "saved",
        }
        (turn,) = await session.edits.history()
        assert turn.assistant == "Noted: no nuts." and "save_note" not in turn.assistant
    finally:
        await close(store, session)


def test_an_echoed_tool_response_is_dropped_and_the_answer_after_it_kept() -> None:
    echo = (
        '<tool_response>\n{"name": "save_note", "arguments": {"action": "add"}}\n</tool_response>'
    )
    gate = ToolTextGate(TOOLS)
    shown = "".join(gate.feed(ch) for ch in echo + "\nNoted: no nuts.")
    found, rest = gate.finish()
    assert found is None and shown + rest == "Noted: no nuts." == gate.answer
    only = ToolTextGate(set())  # no tools offered (the last round): still never an answer
    assert "".join(only.feed(ch) for ch in echo) == "" and only.finish() == (None, "")
    assert only.answer == ""


async def test_a_reply_that_echoes_the_tool_response_stores_only_its_answer(
    fake_openai: FakeOpenAI,
) -> None:
    store, session = await open_session(fake_openai)
    try:
        echo = '<tool_response>\n{"name": "save_note", "arguments": {}}\n</tool_response>\n'
        fake_openai.script(Reply(text=FORMS["bare"]), Reply(text=echo + "Noted: no nuts."))
        events = await run_turn(session, "I'm allergic to nuts, remember that")
        shown = "".join(e.text for e in events if isinstance(e, ev.TextDelta))
        assert shown == "Noted: no nuts." == reply_of(events)
        (turn,) = await session.edits.history()
        assert turn.assistant == "Noted: no nuts."
    finally:
        await close(store, session)


def test_a_call_cut_off_at_the_length_cap_is_not_an_answer() -> None:
    cut = '{"name": "save_note", "arguments": {"action": "add", "content": "Honey bees'
    gate = ToolTextGate(TOOLS)
    assert "".join(gate.feed(ch) for ch in cut) == ""
    assert gate.finish() == (None, "") and gate.answer == ""
    json_answer = ToolTextGate(TOOLS)  # cut JSON that names no tool is what there is
    assert "".join(json_answer.feed(ch) for ch in '{"city": "Ber') == ""
    assert json_answer.finish() == (None, '{"city": "Ber')


async def test_json_that_names_no_tool_is_the_answer(fake_openai: FakeOpenAI) -> None:
    store, session = await open_session(fake_openai)
    try:
        answer = '{"name": "Ada", "born": 1815}'
        fake_openai.script(Reply(text=answer))
        events = await run_turn(session, "Ada as JSON please")
        assert "".join(e.text for e in events if isinstance(e, ev.TextDelta)) == answer
        assert not [e for e in events if isinstance(e, ev.ToolCallStarted)]
        assert (await session.edits.history())[0].assistant == answer
    finally:
        await close(store, session)


def test_a_call_in_doubled_braces_is_a_call_and_a_template_in_braces_is_not() -> None:
    """A chat template that prints the call's shape inside a Jinja string doubles
    its braces (Qwen2.5's, as llama-server renders it), and the model copies them."""
    doubled = '{{"name": "recall_memory", "arguments": {"query": "4172"}}}'
    found = parse(doubled, TOOLS)
    assert found is not None and found.calls[0].arguments == {"query": "4172"}
    gate = ToolTextGate(TOOLS)
    assert "".join(gate.feed(ch) for ch in doubled) == ""
    assert gate.finish()[0] is not None
    handlebars = ToolTextGate(TOOLS)
    assert handlebars.feed("{{ name }} is a") == "{{ name }} is a"  # prose at once
