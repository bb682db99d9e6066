"""Streaming one reply, with its tool rounds.

Each round streams the model's text and reasoning into the turn's progress;
tool calls are run (at most MAX_TOOL_ROUNDS rounds), their results capped to
a share of the window and sent back. A backend that refuses tools is asked
again without them, once, and that is remembered. Raises BackendError.

A model that misuses its tools is asked for its answer without them and the
turn says how (`TurnProgress.tool_trouble`): a call it already made (a
loop), a tool it was not offered, every round spent on calls.

A reply that is a tool call written as text (agent/tools/text_calls.py) is
held back while it streams, run as the call it is, and never shown or kept
as the answer: its text is taken out of the reply again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from newt.agent import events as ev
from newt.agent.tools.builtin import (
    MAX_SHOWN_RESULT_CHARS,
    MAX_TOOL_ROUNDS,
    cap_result,
    run_tool,
    tool_call_message,
)
from newt.agent.tools.text_calls import ToolTextGate
from newt.agent.turn.context import TurnContext, TurnProgress
from newt.agent.turn.reply_pace import PaceMeter
from newt.backend.client import ChatResult, StreamText
from newt.backend.errors import ToolsUnsupportedError
from newt.backend.types import PromptProgress, StreamThinking
from newt.memory import MemMessage

# A tool result may take at most this share of the context window.
TOOL_RESULT_WINDOW_SHARE = 0.25


class ReplyRounds:
    def __init__(self, ctx: TurnContext, progress: TurnProgress) -> None:
        self.s = ctx
        self.p = progress

    async def _stream(
        self, wire: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> AsyncGenerator[ev.AgentEvent | ChatResult, None]:
        # aclosing: a consumer that stops early must close the HTTP stream at once
        options = self.s.settings.request_options()  # only what the conversation set
        p = self.p
        start = len(p.reply)
        gate = ToolTextGate({t["function"]["name"] for t in tools or []})
        first_round = p.first_token_s is None and not p.reply and not p.thinking
        meter = PaceMeter(
            p.prompt_estimate if first_round else None, self.s.capabilities.prompt_rate
        )
        yield meter.start()
        settled = False
        try:
            async with aclosing(self.s.client.stream_chat(wire, tools=tools, **options)) as stream:
                async for item in stream:
                    if isinstance(item, StreamText | StreamThinking) and (pace := meter.token()):
                        if p.first_token_s is None:
                            p.first_token_s = pace.first_token_s
                        yield pace
                    if isinstance(item, StreamText):
                        p.clock.tick()
                        p.reply += item.text
                        if shown := gate.feed(item.text):
                            yield ev.TextDelta(shown)
                    elif isinstance(item, StreamThinking):
                        p.clock.tick()
                        p.thinking += item.text
                        yield ev.ThinkingDelta(item.text)
                    elif isinstance(item, PromptProgress):
                        yield meter.progress(item)
                    elif isinstance(item, ChatResult):
                        if item.usage is not None:
                            rate = meter.measured_rate(
                                item.usage.prompt_tokens, item.usage.cached_tokens
                            )
                            self.s.capabilities.prompt_rate = (
                                rate or self.s.capabilities.prompt_rate
                            )
                        found, rest = gate.finish()
                        settled = True
                        if found is not None:  # a call, not an answer: never kept as one
                            p.reply = p.reply[:start]
                            if not item.tool_calls and not item.interrupted:
                                item = dataclasses.replace(item, text="", tool_calls=found.calls)
                        else:
                            if rest:
                                yield ev.TextDelta(rest)
                            if gate.answer != p.reply[start:]:  # an echoed tool result dropped
                                p.reply = p.reply[:start] + gate.answer
                                item = dataclasses.replace(item, text=gate.answer)
                        yield item
        finally:
            if not settled:  # stopped: what may have been a call or an echo is not kept
                p.reply = p.reply[:start] + ("" if gate.holding else gate.answer)
            p.clock.end_round()

    async def exchange(self, messages: list[MemMessage]) -> AsyncGenerator[ev.AgentEvent, None]:
        """Stream one reply, running tool rounds; raises BackendError on failure."""
        s, p = self.s, self.p
        wire: list[dict[str, Any]] = [{"role": m.role, "content": m.content} for m in messages]
        if p.prompt_estimate is None:
            p.prompt_estimate = sum(s.tokens_for(m.content) for m in messages)
        if s.attachments is not None:
            wire[-1]["content"] = s.attachments.user_content(messages[-1].content)
        made: set[str] = set()  # the calls this turn made, to see a loop
        for round_no in range(MAX_TOOL_ROUNDS + 1):
            use_tools = (
                s.capabilities.supports_tools is not False
                and round_no < MAX_TOOL_ROUNDS
                and p.tool_trouble is None
            )
            result: ChatResult | None = None
            tools = s.tool_schemas if use_tools and s.tool_schemas else None
            p.tools_offered = p.tools_offered or tools is not None
            while True:  # once, or again without tools for a backend that refuses them
                try:
                    async with aclosing(self._stream(wire, tools)) as stream:
                        async for item in stream:
                            if isinstance(item, ChatResult):
                                result = item
                            else:
                                yield item
                    break
                except ToolsUnsupportedError:
                    if tools is None:
                        raise
                    tools = None
                    await s.capabilities.record_tools_unsupported()
                    yield ev.Notice("this backend does not accept tools; continuing without them")
            if result is None:
                return
            p.finish_reason = result.finish_reason
            if result.usage is not None:
                if p.prompt_tokens is None:
                    p.prompt_tokens = result.usage.prompt_tokens
                    p.cached_tokens = result.usage.cached_tokens
                    if s.extra_tools is not None:  # what of them this anchor holds
                        carried = s.extra_tools.schemas() if tools else []
                        s.extra_tools.reported_schema_tokens = (
                            s.tokens_for(json.dumps(carried)) if carried else 0
                        )
                p.completion_tokens += result.usage.completion_tokens
                with contextlib.suppress(Exception):  # a cache write must not fail a turn
                    await s.capabilities.record_accepted_prompt(result.usage.prompt_tokens)
            if result.interrupted:
                p.interrupted = True
                yield ev.Notice("the reply stream was cut off; the partial reply is kept")
                return
            if not result.tool_calls or tools is None:  # no tools offered: no call runs
                return
            p.tool_trouble = p.tool_trouble or _trouble(
                result.tool_calls, made, s.tools, round_no + 1 == MAX_TOOL_ROUNDS
            )
            wire.append(tool_call_message(result.tool_calls, result.text))
            for call in result.tool_calls:
                yield ev.ToolCallStarted(call.id, call.name, call.arguments)
                outcome = await run_tool(s.tools, call.name, call.arguments)
                if outcome.notice:
                    yield ev.Notice(outcome.notice)
                sent = cap_result(outcome.result, self._result_cap(), s.tokens_for)
                if outcome.recallable:
                    p.recallable.append((call.name, call.arguments, sent))
                p.tool_events.append(
                    {
                        "name": call.name,
                        "arguments": call.arguments,
                        "result": outcome.result[:2000],
                        "error": outcome.error,
                    }
                )
                shown = cap_result(outcome.result, MAX_SHOWN_RESULT_CHARS, len)
                yield ev.ToolCallFinished(call.id, call.name, shown, outcome.error)
                wire.append({"role": "tool", "tool_call_id": call.id, "content": sent})
            if p.reply and not p.reply.endswith("\n"):
                p.reply += "\n\n"
            if p.thinking and not p.thinking.endswith("\n"):
                p.thinking += "\n\n"

    def _result_cap(self) -> int:
        ceiling, _ = self.s.capabilities.ceiling_and_reserve()
        return max(64, int(ceiling * TOOL_RESULT_WINDOW_SHARE))


def _trouble(
    calls: list[Any], made: set[str], offered: dict[str, Any], last_round: bool
) -> str | None:
    """How this round's calls misuse the tools, if they do; records them in `made`."""
    said = [f"{c.name} {json.dumps(c.arguments, sort_keys=True)}" for c in calls]
    repeated = all(one in made for one in said)
    made.update(said)
    unknown = sorted({c.name for c in calls if c.name not in offered})
    if unknown:
        return f"called a tool it was not offered ({', '.join(unknown)})"
    if repeated:
        return f"repeated the same call ({calls[0].name})"
    if last_round:
        return f"spent {MAX_TOOL_ROUNDS} rounds on tool calls"
    return None
