"""A scripted stand-in for ChatSession, for UI tests that need exact figures.

Most UI tests drive the real app against the fake OpenAI server; this one is
for what the real stack cannot produce on demand or deterministically (a
particular retention report, a failing turn, a slow stream to cancel).
FakeSession implements all of newt.ui.session_api.SessionLike: one scripted
object plays every part (turns, lifecycle, edits, ...), each reached as the UI
reaches ChatSession's. mypy checks the fit (`_fits` below; scripts/test runs
mypy on this module).
Holds no tests itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from newt.agent import events as ev
from newt.agent.display import HistoryEntry, history_entries
from newt.agent.own_memory.records import ForgetReport, MemoryHit
from newt.agent.own_memory.status import MemoryStatus
from newt.agent.session.settings import ChatSettings, ModelChoice
from newt.agent.tools.approval import Approver
from newt.chat_settings import Preset
from newt.config import Config
from newt.recall import EvidenceCapsule, RetentionReport
from newt.store import Conversation, MemoryRecord, StoredTurn

if TYPE_CHECKING:
    from newt.ui.session_api import SessionLike

NOW = 1_700_000_000.0


@dataclass
class FakeStatus(MemoryStatus):
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
    error_kind: str = "BackendError"
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
    saved: dict[str, list[StoredTurn]] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    closed: bool = False
    next_id: int = 1
    config: Config = field(default_factory=Config)
    incognito: bool = False
    unsaved: bool = False
    settings: ChatSettings = field(default_factory=ChatSettings)
    presets: dict[str, Preset] = field(default_factory=dict)
    default_system_prompt: str = "You are newt, a helpful assistant."
    approver: Approver | None = None
    started_background_work: int = 0

    def script(self, *steps: Step) -> None:
        self.steps.extend(steps)

    # the parts, as ChatSession has them: this one object plays each of them
    @property
    def turns(self) -> FakeSession:
        return self

    @property
    def conversations(self) -> FakeSession:
        return self

    @property
    def edits(self) -> FakeSession:
        return self

    @property
    def settings_controls(self) -> FakeSession:
        return self

    @property
    def memory_commands(self) -> FakeSession:
        return self

    @property
    def memory_records(self) -> FakeSession:
        return self

    @property
    def forgetting(self) -> FakeSession:
        return self

    @property
    def mcp_controls(self) -> FakeSession:
        return self

    def _conv(self, conv_id: str) -> Conversation:
        turns = self.saved[conv_id]
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
        self.saved[conv_id] = turns
        self.titles[conv_id] = title

    def start_background_work(self) -> None:
        self.started_background_work += 1

    async def probed(self) -> None:
        return None

    async def send(self, text: str) -> AsyncGenerator[ev.AgentEvent, None]:
        self.sent.append(text)
        if self.conversation is None:
            conv_id = f"{self.next_id:032x}"
            self.next_id += 1
            self.add_conversation(conv_id, text[:60], [])
            self.conversation = self._conv(conv_id)
        step = self.steps.pop(0) if self.steps else Step(text=f"ok: {text}")
        if step.raise_exc is not None:
            raise step.raise_exc
        turn = make_turn(len(self.saved[self.conversation.id]) + 1, text, "")
        turn.status = "pending"
        self.saved[self.conversation.id].append(turn)
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
        self.status.used += len(text) + len(reply)
        usage = ev.UsageReported(100, 20)
        yield usage
        yield ev.TurnDone(turn.id, reply, "complete", usage)

    def _drop_last_turn(self) -> str:
        """Take the last turn off the conversation (regenerate, edit); its prompt."""
        turns = self.saved[self.conversation.id] if self.conversation else []
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

    def check_attachments(self, text: str) -> None:
        return None  # no files are read: every `@path` passes

    async def last_prompt(self) -> str:
        turns = self.saved[self.conversation.id] if self.conversation else []
        prompts = [t.user for t in turns if t.kind == "turn"]
        if not prompts:
            raise LookupError("nothing to regenerate yet")
        return prompts[-1]

    async def fork(self, at: int | None) -> Conversation:
        if self.conversation is None:
            raise LookupError("nothing to fork yet")
        parent = self.conversation
        turns = [t for t in self.saved[parent.id] if t.kind == "turn"]
        conv_id = f"{self.next_id:032x}"
        self.next_id += 1
        self.add_conversation(conv_id, parent.title, list(turns[: at or len(turns)]))
        self.conversation = replace(
            self._conv(conv_id), parent_id=parent.id, parent_title=parent.title
        )
        return self.conversation

    async def new_conversation(self) -> None:
        self.conversation = None
        self.last_retention = None

    async def resume(self, id_or_prefix: str) -> Conversation:
        found = [c for c in self.saved if c.startswith(id_or_prefix)]
        if len(found) != 1:
            raise LookupError(f"no conversation matches {id_or_prefix!r}")
        self.conversation = self._conv(found[0])
        return self.conversation

    async def continue_latest(self) -> Conversation | None:
        if not self.conversations:
            return None
        return await self.resume(list(self.saved)[-1])

    async def history(self) -> list[HistoryEntry]:
        turns = self.saved[self.conversation.id] if self.conversation else []
        return history_entries(turns)

    async def search_conversations(self, text: str) -> list[Conversation]:
        out = []
        for conv_id, turns in self.saved.items():
            hay = self.titles[conv_id] + " ".join(t.user + t.assistant for t in turns)
            if text.lower() in hay.lower():
                out.append(self._conv(conv_id))
        return out

    async def list_conversations(self) -> list[Conversation]:
        return await self.search_conversations("")

    def memory_status(self) -> FakeStatus:
        return self.status

    def estimate_tokens(self, text: str) -> int:
        return len(text) // 4

    async def count_tokens(self, text: str) -> int:
        return self.estimate_tokens(text)

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

    async def set_model(self, model: str) -> None:
        self.model = model

    async def export(self, fmt: str) -> str:
        return f"exported as {fmt}"

    async def list_models(self) -> list[ModelChoice]:
        return [ModelChoice(self.model, None, "", True)]

    async def update_settings(self, settings: ChatSettings) -> None:
        self.settings = settings

    async def apply_preset(
        self, name: str, *, for_new: bool = False, switch_model: bool = True
    ) -> Preset:
        preset = self.presets.get(name)
        if preset is None:
            raise LookupError(f"no preset named {name!r}")
        self.settings = replace(preset.settings, preset=name)
        if preset.model and switch_model:
            self.model = preset.model
        return preset

    async def set_incognito(self, on: bool) -> ForgetReport | None:
        self.incognito = on
        return None

    async def recall_preview(self, text: str) -> tuple[RetentionReport | None, str]:
        return self.last_retention, ""

    async def search(self, query: str) -> list[MemoryHit]:
        return []

    async def matching(self, query: str) -> list[MemoryHit]:
        return []

    async def forget(self, keys: list[str]) -> ForgetReport:
        return ForgetReport()

    async def forget_matching(self, query: str, *, sentences: bool = False) -> ForgetReport:
        return ForgetReport()

    async def forget_everything(self) -> ForgetReport:
        return ForgetReport()

    async def delete_conversation(self, id_or_prefix: str) -> tuple[Conversation, ForgetReport]:
        found = [c for c in self.saved if c.startswith(id_or_prefix)]
        if len(found) != 1:
            raise LookupError(f"no conversation matches {id_or_prefix!r}")
        conv = self._conv(found[0])
        del self.saved[found[0]]
        if self.conversation is not None and self.conversation.id == found[0]:
            self.conversation = None
        return conv, ForgetReport(conversations=1)

    async def rename_conversation(self, id_or_prefix: str, title: str) -> Conversation:
        found = [c for c in self.saved if c.startswith(id_or_prefix)]
        if len(found) != 1:
            raise LookupError(f"no conversation matches {id_or_prefix!r}")
        self.titles[found[0]] = title
        renamed = self._conv(found[0])
        if self.conversation is not None and self.conversation.id == found[0]:
            self.conversation = renamed
        return renamed

    def set_tool_approver(self, approver: Approver | None) -> None:
        self.approver = approver

    def tools_report(self) -> str:
        return "No MCP servers configured."

    def set_tool_enabled(self, name: str, enabled: bool) -> bool:
        return False  # no server, no tool of that name

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


if TYPE_CHECKING:

    def _fits(session: FakeSession) -> SessionLike:
        return session  # mypy: the fake is everything the UI may ask of a session
