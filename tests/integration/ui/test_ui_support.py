"""A scripted stand-in for ChatSession, for UI tests that need exact figures.

Most UI tests drive the real app against the fake OpenAI server; this one is
for what the real stack cannot produce on demand or deterministically (a
particular retention report, a failing turn, a slow stream to cancel).
Holds no tests itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from newt.agent import events as ev
from newt.agent.views import HistoryEntry, history_entries
from newt.recall import EvidenceCapsule, RetentionReport
from newt.store import Conversation, MemoryRecord, StoredTurn

NOW = 1_700_000_000.0


@dataclass
class FakeStatus:
    provider: str = "token_budget"
    label: str = "tokens"
    used: int = 1234
    budget: int = 6553
    budget_source: str = "backend"
    context_tokens: int = 8192
    last_reported: int | None = 1200
    estimate_delta: int = 34
    resident_turns: int = 3
    total_turns: int = 5
    compactions: int = 1
    notes_used: int = 42
    notes_limit: int = 2200
    last_retention: RetentionReport | None = None


def sample_report() -> RetentionReport:
    return RetentionReport(
        budget_tokens=1024,
        retained_tokens=96,
        capsules=[
            EvidenceCapsule(
                "t12", "t12", "User: where is the cabin?\nAssistant: by the lake", 20, 0.71
            ),
            EvidenceCapsule("n3", "n3", "The user prefers metric units.", 12, 0.45),
        ],
        candidates_examined=5,
        dropped=3,
    )


@dataclass
class Step:
    """One scripted reply: text chunks, optional tool call, error or delay."""

    text: str = "Hello from the fake session."
    chunk: int = 5
    delay: float = 0.0
    error: str | None = None
    retryable: bool = True
    tool: tuple[str, dict[str, Any], str] | None = None
    report: RetentionReport | None = None
    raise_exc: Exception | None = None
    gate: asyncio.Event | None = None
    """Streaming waits for this after the first chunk (holds a turn in flight)."""


@dataclass
class FakeSession:
    model: str = "fake-model"
    base_url: str = "http://127.0.0.1:1/v1"
    conversation: Conversation | None = None
    last_retention: RetentionReport | None = None
    steps: list[Step] = field(default_factory=list)
    status: FakeStatus = field(default_factory=FakeStatus)
    sent: list[str] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    conversations: dict[str, list[StoredTurn]] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    closed: bool = False
    next_id: int = 1

    def script(self, *steps: Step) -> None:
        self.steps.extend(steps)

    def _conv(self, conv_id: str) -> Conversation:
        turns = self.conversations[conv_id]
        return Conversation(
            conv_id,
            self.titles.get(conv_id, ""),
            self.model,
            self.base_url,
            time.time(),  # the picker shows "just now": stable in snapshots
            time.time(),
            sum(1 for t in turns if t.kind == "turn"),
        )

    def add_conversation(self, conv_id: str, title: str, turns: list[StoredTurn]) -> None:
        self.conversations[conv_id] = turns
        self.titles[conv_id] = title

    async def send(self, text: str) -> AsyncIterator[ev.AgentEvent]:
        self.sent.append(text)
        if self.conversation is None:
            conv_id = f"{self.next_id:032x}"
            self.next_id += 1
            self.add_conversation(conv_id, text[:60], [])
            self.conversation = self._conv(conv_id)
        step = self.steps.pop(0) if self.steps else Step(text=f"ok: {text}")
        if step.raise_exc is not None:
            raise step.raise_exc
        turn = make_turn(len(self.conversations[self.conversation.id]) + 1, text, "")
        turn.status = "pending"
        self.conversations[self.conversation.id].append(turn)
        yield ev.TurnStarted(turn.id, text)
        if step.report is not None:
            self.last_retention = self.status.last_retention = step.report
            yield ev.RetainedEvidence(step.report)
        reply = ""
        try:
            if step.tool is not None:
                name, args, result = step.tool
                yield ev.ToolCallStarted("call-1", name, args)
                yield ev.ToolCallFinished("call-1", name, result)
            if step.error is not None:
                turn.status = "failed"
                yield ev.TurnError(step.error, step.retryable, "BackendError")
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
        self.status.used += len(text) + len(reply)
        usage = ev.UsageReported(100, 20)
        yield usage
        yield ev.TurnDone(turn.id, reply, "complete", usage)

    async def new_conversation(self) -> None:
        self.conversation = None
        self.last_retention = None

    async def resume(self, id_or_prefix: str) -> Conversation:
        found = [c for c in self.conversations if c.startswith(id_or_prefix)]
        if len(found) != 1:
            raise LookupError(f"no conversation matches {id_or_prefix!r}")
        self.conversation = self._conv(found[0])
        return self.conversation

    async def continue_latest(self) -> Conversation | None:
        if not self.conversations:
            return None
        return await self.resume(list(self.conversations)[-1])

    async def history(self) -> list[HistoryEntry]:
        turns = self.conversations[self.conversation.id] if self.conversation else []
        return history_entries(turns)

    async def search_conversations(self, text: str) -> list[Conversation]:
        out = []
        for conv_id, turns in self.conversations.items():
            hay = self.titles[conv_id] + " ".join(t.user + t.assistant for t in turns)
            if text.lower() in hay.lower():
                out.append(self._conv(conv_id))
        return out

    async def list_conversations(self) -> list[Conversation]:
        return await self.search_conversations("")

    def memory_status(self) -> FakeStatus:
        return self.status

    async def note(self, arg: str) -> str:
        if arg == "list":
            return "\n".join(self.notes) or "no notes yet"
        self.notes.append(arg)
        return "saved note"

    async def compact(self, focus: str | None) -> ev.Compacted | None:
        return ev.Compacted(
            "[CONTEXT COMPACTION — REFERENCE ONLY]\nx\n\nsummary here", 1, 200, "manual"
        )

    async def fetch_record(self, key: str) -> MemoryRecord | None:
        if key == "missing":
            return None
        return MemoryRecord(1, key, "turn", None, f"Full verbatim record {key}.", 0, NOW)

    async def set_model(self, name: str) -> None:
        self.model = name

    async def export(self, fmt: str) -> str:
        return f"exported as {fmt}"

    async def close(self) -> None:
        self.closed = True


def make_turn(
    turn_id: int, user: str, assistant: str, *, kind: str = "turn", status: str = "complete"
) -> StoredTurn:
    return StoredTurn(
        id=turn_id,
        conversation_id="c",
        kind=kind,  # type: ignore[arg-type]
        status=status,  # type: ignore[arg-type]
        user=user,
        assistant=assistant,
        tokens_in=None,
        tokens_out=None,
        resident_turns=2 if kind == "compaction" else None,
        used_after=None,
        created_at=time.time(),
    )
