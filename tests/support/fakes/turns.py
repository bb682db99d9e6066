"""FakeTurns, the fake TurnsApi: turns replay scripted Steps into the shared FakeState.

A turn's reply, tool call, error, delay or exception is scripted (Step) rather than
generated, for what the real stack cannot produce on demand: a failing turn, a
reply held mid-stream to cancel, a particular retention report. What was sent and
what was cut short are kept here for the test to check.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from newt.agent import events as ev
from newt.recall import RetentionReport
from tests.support.fakes.state import FakeState, make_turn

if TYPE_CHECKING:
    from newt.ui.session_api import TurnsApi


@dataclass
class Step:
    """One scripted reply: text chunks, optional tool call, error or delay."""

    text: str = "Hello from the fake session."
    chunk: int = 5
    delay: float = 0.0
    error: str | None = None
    retryable: bool = True
    error_kind: str = "BackendError"
    tool: tuple[str, dict[str, Any], str] | None = None
    report: RetentionReport | None = None
    raise_exc: Exception | None = None
    gate: asyncio.Event | None = None
    """Streaming waits for this after the first chunk (holds a turn in flight)."""


@dataclass
class FakeTurns:
    """Send, regenerate, edit the last: each turn takes the next scripted Step (or
    answers "ok: <text>" when none is left), stores itself in the open conversation
    (opening one on the first send) and streams the events ChatSession's turns do."""

    state: FakeState
    steps: list[Step] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    """Every text a turn was started with, in order (a regenerate resends its prompt)."""
    interrupted: list[str] = field(default_factory=list)
    """The partial reply of each turn cancelled mid-stream."""

    def script(self, *steps: Step) -> None:
        """Queue replies for the next turns, in order."""
        self.steps.extend(steps)

    async def send(self, text: str) -> AsyncGenerator[ev.AgentEvent, None]:
        state = self.state
        self.sent.append(text)
        if state.conversation is None:
            conv_id = state.new_id()
            state.add_conversation(conv_id, text[:60], [])
            state.conversation = state.listed(conv_id)
        step = self.steps.pop(0) if self.steps else Step(text=f"ok: {text}")
        if step.raise_exc is not None:
            raise step.raise_exc
        turns = state.saved[state.conversation.id]
        turn = make_turn(len(turns) + 1, text, "")
        turn.status = "pending"
        turns.append(turn)
        yield ev.TurnStarted(turn.id, text)
        if step.report is not None:
            state.last_retention = state.status.last_retention = step.report
            yield ev.RetainedEvidence(step.report)
        reply = ""
        try:
            if step.tool is not None:
                name, args, result = step.tool
                yield ev.ToolCallStarted("call-1", name, args)
                yield ev.ToolCallFinished("call-1", name, result)
            if step.error is not None:
                turn.status = "failed"
                yield ev.TurnError(step.error, step.retryable, step.error_kind)
                yield ev.TurnDone(turn.id, "", "failed")
                return
            for i in range(0, len(step.text), step.chunk):
                if step.delay:
                    await asyncio.sleep(step.delay)
                if i and step.gate is not None:
                    await step.gate.wait()
                piece = step.text[i : i + step.chunk]
                reply += piece
                yield ev.TextDelta(piece)
        except (asyncio.CancelledError, GeneratorExit):
            turn.assistant, turn.status = reply, "interrupted"
            self.interrupted.append(reply)
            raise
        turn.assistant, turn.status = reply, "complete"
        state.status.used += len(text) + len(reply)
        usage = ev.UsageReported(100, 20)
        yield usage
        yield ev.TurnDone(turn.id, reply, "complete", usage)

    def _drop_last_turn(self) -> str:
        """Take the last turn off the conversation (regenerate, edit); its prompt."""
        turns = self.state.open_turns()
        last = max((i for i, t in enumerate(turns) if t.kind == "turn"), default=None)
        if last is None:
            raise LookupError("nothing to regenerate yet")
        prompt = turns[last].user
        del turns[last:]
        return prompt

    def regenerate(self) -> AsyncGenerator[ev.AgentEvent, None]:
        return self.send(self._drop_last_turn())

    def edit_last(self, text: str) -> AsyncGenerator[ev.AgentEvent, None]:
        self._drop_last_turn()
        return self.send(text)

    async def recall_preview(self, text: str) -> tuple[RetentionReport | None, str]:
        return self.state.last_retention, ""


if TYPE_CHECKING:

    def _fits(turns: FakeTurns) -> TurnsApi:
        return turns  # mypy: the fake is every turn the UI may start
