"""A chat session: one backend, one memory provider, one conversation at a time.

This is the agentic loop of DESIGN.md section 4, usable without any UI. One
call to `send()` runs one user turn and yields plain events:

    persist the user's words (pending) -> recall evidence -> build_messages
    -> pre-send guard (compact first if the prompt would not fit)
    -> stream the reply, running tools for up to 8 rounds
    -> persist the turn -> sync_turn with the backend's usage
    -> persist any compaction record
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from newt.agent import events as ev
from newt.agent.export import export_conversation
from newt.agent.tools import (
    MAX_TOOL_ROUNDS,
    TOOL_SCHEMAS,
    ToolHandler,
    run_tool,
    tool_call_message,
)
from newt.backend import capabilities as caps
from newt.backend.client import ChatClient, ChatResult, TextDelta
from newt.backend.errors import (
    BackendError,
    ContextLengthExceededError,
    ToolsUnsupportedError,
)
from newt.backend.probe import probe_context_window
from newt.config import Config
from newt.memory import (
    MemMessage,
    MemoryProvider,
    SessionContext,
    TurnMetrics,
    Usage,
    create_provider,
)
from newt.memory.notes import NoteBook
from newt.memory.restore import conversation_turns_from_log
from newt.recall import RecallEngine, RecallRequest, RetentionReport
from newt.resources import asset_text
from newt.store import Conversation, MemoryRecord, Store, StoredTurn


class SessionError(Exception):
    """A user-facing problem with a request to the session (bad id, no backend...)."""


class ConversationNotFound(SessionError):
    pass


class AmbiguousConversation(SessionError):
    pass


class NoBackendConfigured(SessionError):
    pass


async def resolve_conversation(store: Store, prefix: str) -> Conversation:
    """The one conversation whose id starts with `prefix`."""
    prefix = prefix.strip()
    if not prefix:
        raise ConversationNotFound("no conversation id given")
    found = await store.conversations.find_by_prefix(prefix)
    if not found:
        raise ConversationNotFound(
            f"no conversation with id {prefix!r}; `newt list` shows the saved ones"
        )
    if len(found) > 1:
        ids = ", ".join(c.id[:12] for c in found[:5])
        raise AmbiguousConversation(
            f"{len(found)} conversations start with {prefix!r} ({ids}); give more characters"
        )
    return found[0]


@dataclass
class MemoryStatus:
    """Everything the /memory panel and `--json` report."""

    provider: str
    label: str
    used: int
    budget: int
    budget_source: str
    context_tokens: int
    last_reported: int | None
    estimate_delta: int
    resident_turns: int
    total_turns: int
    compactions: int
    notes_used: int
    notes_limit: int
    last_retention: RetentionReport | None = None


@dataclass
class _TurnState:
    reply: str = ""
    tool_events: list[dict[str, Any]] = field(default_factory=list)
    usage: ev.UsageReported | None = None
    compactions: list[ev.Compacted] = field(default_factory=list)
    interrupted: bool = False
    compact_reason: str = "budget"


# Tokens kept free for the reply when checking that a prompt fits.
REPLY_RESERVE_MAX = 1024


class ChatSession:
    def __init__(self, config: Config, store: Store, client: ChatClient) -> None:
        self.config = config
        self.store = store
        self.client = client
        self.model = config.backend.model
        self.base_url = config.backend.base_url
        self.conversation: Conversation | None = None
        self.notes = NoteBook()
        self.recall = RecallEngine(store, excerpt_tokens=config.recall.excerpt_tokens)
        self.last_retention: RetentionReport | None = None
        self.budget = caps.resolve_budget(config.memory.context_tokens, None)
        self.supports_tools: bool | None = None
        self.live_ceiling: int | None = None
        self.provider: MemoryProvider = self._make_provider()
        self._resident_keys: list[str] = []
        self._system_prompt = asset_text("system_prompt.md").strip()

    # ------------------------------------------------------------------ setup

    @classmethod
    async def open(cls, config: Config, store: Store, *, probe: bool = True) -> ChatSession:
        if not config.backend.base_url:
            raise NoBackendConfigured(
                "no backend configured: set [backend] base_url in "
                f"{config.path}, OPENAI_BASE_URL, or pass --base-url (or try `newt --local`)"
            )
        if not config.backend.model:
            raise NoBackendConfigured(
                f"no model configured: set [backend] model in {config.path} or pass --model"
            )
        client = ChatClient(
            config.backend.base_url,
            config.backend.model,
            config.api_key,
            timeout_s=config.backend.timeout_s,
            max_retries=config.backend.max_retries,
        )
        session = cls(config, store, client)
        try:
            session.notes = await NoteBook.load(store.notes)
            await session._refresh_capabilities(probe=probe)
        except BaseException:
            await client.aclose()
            raise
        return session

    async def _refresh_capabilities(self, *, probe: bool) -> None:
        repo = self.store.capabilities
        if probe:
            found = await probe_context_window(self.base_url, self.model, self.config.api_key)
            if found.context_window:
                await caps.record_probe(repo, self.base_url, self.model, found.context_window)
        cap = await repo.get(self.base_url, self.model)
        self.budget = caps.resolve_budget(self.config.memory.context_tokens, cap)
        self.supports_tools = cap.supports_tools if cap else None
        self.live_ceiling = self._ceiling_from(cap)
        self.provider = self._make_provider()
        if cap and cap.chars_per_token:
            self._apply_calibration(cap.chars_per_token)

    def _ceiling_from(self, cap: Any) -> int | None:
        if cap is None:
            return self.config.memory.context_tokens
        limits = [v for v in (cap.context_window, cap.safe_context) if v]
        if self.config.memory.context_tokens:
            limits.append(self.config.memory.context_tokens)
        return min(limits) if limits else None

    def _make_provider(self) -> MemoryProvider:
        provider = create_provider(
            self.config.memory.provider,
            context_tokens=self.budget.context_tokens,
            threshold_pct=self.config.memory.threshold_pct,
            chars_per_token=self.config.estimation.chars_per_token,
            summarizer=self._summarize,
            notes=self.notes,
            budget_source=self.budget.source,
        )
        return provider

    def _apply_calibration(self, chars_per_token: float) -> None:
        calibrate = getattr(self.provider, "set_chars_per_token", None)
        if calibrate is not None:
            calibrate(chars_per_token)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.provider.on_session_end([])
        await self.client.aclose()

    async def __aenter__(self) -> ChatSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---------------------------------------------------------- conversations

    async def new_conversation(self) -> None:
        """Start fresh: the provider is reset, its configuration kept."""
        self.provider.reset()
        self.conversation = None
        self._resident_keys = []
        self.last_retention = None

    async def resume(self, id_or_prefix: str) -> Conversation:
        conv = await resolve_conversation(self.store, id_or_prefix)
        await self._load(conv)
        return conv

    async def continue_latest(self) -> Conversation | None:
        conv = await self.store.conversations.latest()
        if conv is not None:
            await self._load(conv)
        return conv

    async def _load(self, conv: Conversation) -> None:
        self.provider.reset()
        log = await self.store.turns.for_conversation(conv.id)
        self.provider.restore_turns(conversation_turns_from_log(log))
        self.conversation = conv
        self._resident_keys = self._keys_resident(log)
        self.last_retention = None

    def _keys_resident(self, log: list[StoredTurn]) -> list[str]:
        """Record keys of what the working set holds now (excluded from recall)."""
        kept = [t for t in log if t.kind == "turn" and t.status in ("complete", "interrupted")]
        records = [t for t in log if t.kind == "compaction"]
        n = self.provider.resident_turns()
        keys = [f"t{t.id}" for t in kept[len(kept) - n :]] if n else []
        if records:
            keys.append(f"c{records[-1].id}")
        return keys

    async def history(self) -> list[StoredTurn]:
        if self.conversation is None:
            return []
        return await self.store.turns.for_conversation(self.conversation.id)

    async def list_conversations(self) -> list[Conversation]:
        return await self.store.conversations.list()

    async def search_conversations(self, text: str) -> list[Conversation]:
        return await self.store.conversations.search(text)

    async def export(self, fmt: str = "md") -> str:
        if self.conversation is None:
            raise SessionError("nothing to export yet: this conversation has no turns")
        conv = await self.store.conversations.get(self.conversation.id) or self.conversation
        return await export_conversation(self.store, conv, fmt)

    async def set_model(self, model: str) -> None:
        """Switch model; the budget is re-resolved for it and the history restored."""
        model = model.strip()
        if not model:
            raise SessionError("give a model name: /model NAME")
        self.model = self.config.backend.model = model
        await self.client.aclose()
        self.client = ChatClient(
            self.base_url,
            model,
            self.config.api_key,
            timeout_s=self.config.backend.timeout_s,
            max_retries=self.config.backend.max_retries,
        )
        await self._refresh_capabilities(probe=True)
        if self.conversation is not None:
            await self.store.conversations.set_model(self.conversation.id, model, self.base_url)
            await self._load(self.conversation)

    # ---------------------------------------------------------------- memory

    def memory_status(self) -> MemoryStatus:
        usage = self.provider.usage() or ("tokens", 0, 0)
        p: Any = self.provider
        return MemoryStatus(
            provider=self.provider.name,
            label=usage[0],
            used=usage[1],
            budget=usage[2],
            budget_source=self.budget.source,
            context_tokens=self.budget.context_tokens,
            last_reported=getattr(p, "last_reported", None),
            estimate_delta=getattr(p, "estimate_delta", 0),
            resident_turns=self.provider.resident_turns(),
            total_turns=getattr(p, "total_turns", self.provider.resident_turns()),
            compactions=getattr(p, "compactions", 0),
            notes_used=self.notes.used_chars,
            notes_limit=self.notes.limit,
            last_retention=self.last_retention,
        )

    async def note(self, arg: str) -> str:
        """The /note sub-language: `<text>`, `replace <old> => <new>`, `remove <text>`, `list`."""
        arg = arg.strip()
        head, _, rest = arg.partition(" ")
        if not arg or head == "list":
            if not self.notes.notes:
                return "no notes yet: /note <text> adds one"
            return self.notes.render_list()
        if head == "remove":
            removed = await self.notes.remove(self.store.notes, rest)
            return f"removed note: {removed}"
        if head == "replace":
            old, sep, new = rest.partition("=>")
            if not sep:
                raise SessionError("use /note replace <old text> => <new text>")
            await self.notes.replace(self.store.notes, old.strip(), new.strip())
            return f"replaced note with: {new.strip()}"
        added = await self.notes.add(self.store.notes, arg)
        return "saved note" if added else "that note is already saved"

    async def fetch_record(self, key: str) -> MemoryRecord | None:
        return await self.recall.fetch(key.strip())

    async def compact(self, focus: str | None = None) -> ev.Compacted | None:
        """`/compact [focus]`: fold everything but the newest turn into the record."""
        if self.conversation is None:
            return None
        compact = getattr(self.provider, "compact", None)
        if compact is None or not await compact(focus or None):
            return None
        return await self._persist_compaction("manual")

    async def _persist_compaction(self, reason: str) -> ev.Compacted | None:
        record = self.provider.take_compaction_record()
        if record is None or self.conversation is None:
            return None
        usage = self.provider.usage()
        used_after = usage[1] if usage else 0
        resident = self.provider.resident_turns()
        turn_id = await self.store.turns.add_compaction(
            self.conversation.id, record, resident_turns=resident, used_after=used_after
        )
        self._resident_keys = self._resident_keys[-resident:] if resident else []
        self._resident_keys.append(f"c{turn_id}")
        return ev.Compacted(record, resident, used_after, reason)

    async def _summarize(self, messages: list[MemMessage]) -> str:
        result = await self.client.complete(
            [{"role": m.role, "content": m.content} for m in messages], max_tokens=600
        )
        return result.text.strip()

    # ------------------------------------------------------------------ turn

    def _tool_handlers(self) -> dict[str, ToolHandler]:
        async def save_note(args: dict[str, Any]) -> str:
            action = str(args.get("action", "add"))
            content = str(args.get("content") or "")
            old = str(args.get("old_text") or "")
            if action == "add":
                added = await self.notes.add(self.store.notes, content)
                return "saved" if added else "already saved"
            if action == "replace":
                await self.notes.replace(self.store.notes, old, content)
                return "replaced"
            if action == "remove":
                await self.notes.remove(self.store.notes, old or content)
                return "removed"
            raise ValueError(f"unknown action {action!r}; use add, replace or remove")

        async def recall_memory(args: dict[str, Any]) -> str:
            response = await self.recall.recall(
                RecallRequest(
                    str(args.get("query", "")),
                    retained_token_budget=self.config.recall.retained_token_budget or 1024,
                )
            )
            report = response.retained_evidence
            if report is None or not report.capsules:
                return "no matching memories"
            return "\n".join(f"[{c.retrieval_key}] {c.excerpt}" for c in report.capsules)

        async def fetch_record(args: dict[str, Any]) -> str:
            record = await self.recall.fetch(str(args.get("key", "")).strip())
            if record is None:
                raise LookupError(f"no record with key {args.get('key')!r}")
            return record.content

        return {
            "save_note": save_note,
            "recall_memory": recall_memory,
            "fetch_record": fetch_record,
        }

    def _evidence_block(self, report: RetentionReport | None) -> str:
        if report is None or not report.capsules:
            return ""
        lines = [
            "Retained evidence from memory (verbatim excerpts, reference only; "
            "fetch_record(key) returns a record in full):"
        ]
        lines += [f"- [{c.retrieval_key}] {c.excerpt}" for c in report.capsules]
        return "\n".join(lines) + "\n\n"

    def _tokens(self, text: str) -> int:
        tokens_for = getattr(self.provider, "tokens_for", None)
        if tokens_for is not None:
            return int(tokens_for(text))
        per = max(1, self.config.estimation.chars_per_token)
        return -(-len(text) // per)

    def _ceiling_and_reserve(self) -> tuple[int, int]:
        ceiling = self.live_ceiling or self.budget.context_tokens
        return ceiling, min(REPLY_RESERVE_MAX, ceiling // 4)

    async def _guard(self, messages: list[MemMessage]) -> bool:
        """The pre-send guard: compact first if prompt + reply reserve would pass the ceiling.

        `used` already counts the system prompt and history once the backend has
        reported a prompt size; before that it counts turns only, so the system
        prompt is added here.
        """
        compact_for = getattr(self.provider, "compact_for", None)
        usage = self.provider.usage()
        if compact_for is None or usage is None:
            return False
        ceiling, reserve = self._ceiling_and_reserve()
        required = self._tokens(messages[-1].content) + reserve
        if getattr(self.provider, "last_reported", None) is None:
            required += self._tokens(messages[0].content)
        if usage[1] + required <= ceiling:
            return False
        await compact_for(required, limit=ceiling)
        return True

    async def _shrink_after_overflow(self, exc: ContextLengthExceededError) -> bool:
        """Fold enough history that the retried prompt fits what the server said.

        Our figure and the server's count differ, so scale: if the server
        counted P tokens where we hold `used`, keeping used * target / P fits.
        """
        compact_for = getattr(self.provider, "compact_for", None)
        usage = self.provider.usage()
        if compact_for is None or usage is None:
            return False
        ceiling, reserve = self._ceiling_and_reserve()
        target = max(0, ceiling - reserve)
        reported = exc.prompt_tokens or 0
        limit = int(usage[1] * target / reported) if reported > target else usage[1] // 2
        before = self.provider.usage()
        await compact_for(0, limit=limit)
        return self.provider.usage() != before

    async def send(self, text: str) -> AsyncIterator[ev.AgentEvent]:
        """Run one user turn. Cancelling the consumer keeps the partial reply."""
        if not text.strip():
            raise SessionError("the message is empty")
        if self.conversation is None:
            self.conversation = await self.store.conversations.create(
                model=self.model, base_url=self.base_url
            )
        conv = self.conversation
        turn_id = await self.store.turns.add_pending(conv.id, text)
        yield ev.TurnStarted(turn_id, text)
        state = _TurnState()
        try:
            async for event in self._run_turn(text, state):
                yield event
        except asyncio.CancelledError:
            await asyncio.shield(self._finish(turn_id, text, state, "interrupted"))
            raise
        except BackendError as exc:
            await self.store.turns.fail(turn_id, exc.message)
            yield ev.TurnError(exc.message, exc.retryable, type(exc).__name__)
            yield ev.TurnDone(turn_id, state.reply, "failed", state.usage, state.compactions)
            return
        status = "interrupted" if state.interrupted else "complete"
        compactions = await self._finish(turn_id, text, state, status)
        for c in compactions:
            yield c
        if state.usage is not None:
            yield state.usage
        yield ev.TurnDone(turn_id, state.reply, status, state.usage, state.compactions)

    async def _finish(
        self, turn_id: int, text: str, state: _TurnState, status: str
    ) -> list[ev.Compacted]:
        """Persist the turn, tell the provider, persist any compaction record."""
        usage = state.usage
        await self.store.turns.complete(
            turn_id,
            state.reply,
            status="interrupted" if status == "interrupted" else "complete",
            tokens_in=usage.prompt_tokens if usage else None,
            tokens_out=usage.completion_tokens if usage else None,
            tool_events=state.tool_events,
        )
        metrics = TurnMetrics(
            Usage(usage.prompt_tokens, usage.completion_tokens) if usage else None
        )
        await self.provider.sync_turn(text, state.reply, metrics)
        self._resident_keys.append(f"t{turn_id}")
        compacted = await self._persist_compaction(state.compact_reason)
        if compacted is not None:
            state.compactions.append(compacted)
            return [compacted]
        return []

    async def _note_keys(self) -> set[str]:
        """Notes already ride in the system prompt; capsules of them would repeat them."""
        return await self.store.notes.record_keys()

    async def _recall_evidence(self, text: str) -> RetentionReport | None:
        budget = self.config.recall.retained_token_budget
        if budget <= 0:
            return None
        response = await self.recall.recall(
            RecallRequest(text, limit=8, retained_token_budget=budget),
            exclude_keys=set(self._resident_keys) | await self._note_keys(),
        )
        return response.retained_evidence

    async def _run_turn(self, text: str, state: _TurnState) -> AsyncIterator[ev.AgentEvent]:
        report = await self._recall_evidence(text)
        self.last_retention = report
        if report is not None:
            yield ev.RetainedEvidence(report)
        evidence = self._evidence_block(report)
        system = self._system_prompt

        def build() -> list[MemMessage]:
            msgs = self.provider.build_messages(system, text)
            if evidence:
                # capsules go in this request only; the stored turn stays the user's own text
                msgs[-1] = MemMessage(msgs[-1].role, evidence + msgs[-1].content)
            return msgs

        messages = build()
        if await self._guard(messages):
            # the record is persisted after this turn, which it precedes in the working set
            state.compact_reason = "guard"
            messages = build()

        retried_overflow = False
        while True:
            try:
                async for event in self._exchange(messages, state):
                    yield event
                return
            except ContextLengthExceededError as exc:
                if retried_overflow:
                    raise
                retried_overflow = True
                overflow_at = exc.prompt_tokens or exc.context_window or self.budget.context_tokens
                await caps.record_overflow(
                    self.store.capabilities, self.base_url, self.model, overflow_at
                )
                cap = await self.store.capabilities.get(self.base_url, self.model)
                self.live_ceiling = self._ceiling_from(cap)
                yield ev.Notice(
                    f"the prompt did not fit the model's context ({exc.message}); "
                    "compacting and retrying"
                )
                if await self._shrink_after_overflow(exc):
                    state.compact_reason = "overflow"
                messages = build()
                state.reply = ""

    async def _exchange(
        self, messages: list[MemMessage], state: _TurnState
    ) -> AsyncIterator[ev.AgentEvent]:
        """Stream one reply, running tool rounds; raises BackendError on failure."""
        wire: list[dict[str, Any]] = [{"role": m.role, "content": m.content} for m in messages]
        handlers = self._tool_handlers()
        for _round in range(MAX_TOOL_ROUNDS + 1):
            use_tools = self.supports_tools is not False and _round < MAX_TOOL_ROUNDS
            try:
                result = None
                async for item in self.client.stream_chat(
                    wire, tools=TOOL_SCHEMAS if use_tools else None
                ):
                    if isinstance(item, TextDelta):
                        state.reply += item.text
                        yield ev.TextDelta(item.text)
                    elif isinstance(item, ChatResult):
                        result = item
            except ToolsUnsupportedError:
                self.supports_tools = False
                await caps.record_tools_unsupported(
                    self.store.capabilities, self.base_url, self.model
                )
                yield ev.Notice("this backend does not accept tools; continuing without them")
                state.reply = ""
                result = None
                async for item in self.client.stream_chat(wire, tools=None):
                    if isinstance(item, TextDelta):
                        state.reply += item.text
                        yield ev.TextDelta(item.text)
                    elif isinstance(item, ChatResult):
                        result = item
            if result is None:
                return
            if result.usage is not None:
                state.usage = ev.UsageReported(
                    result.usage.prompt_tokens,
                    result.usage.completion_tokens,
                    result.usage.cached_tokens,
                )
                await caps.record_accepted_prompt(
                    self.store.capabilities, self.base_url, self.model, result.usage.prompt_tokens
                )
            if result.interrupted:
                state.interrupted = True
                yield ev.Notice("the reply stream was cut off; the partial reply is kept")
                return
            if not result.tool_calls:
                return
            wire.append(tool_call_message(result.tool_calls, result.text))
            for call in result.tool_calls:
                yield ev.ToolCallStarted(call.id, call.name, call.arguments)
                outcome = await run_tool(handlers, call.name, call.arguments)
                state.tool_events.append(
                    {
                        "name": call.name,
                        "arguments": call.arguments,
                        "result": outcome.result[:2000],
                        "error": outcome.error,
                    }
                )
                yield ev.ToolCallFinished(call.id, call.name, outcome.result, outcome.error)
                wire.append({"role": "tool", "tool_call_id": call.id, "content": outcome.result})
            if state.reply and not state.reply.endswith("\n"):
                state.reply += "\n\n"


def session_context(conv: Conversation | None) -> SessionContext:
    return SessionContext(session_id=conv.id if conv else "", workspace=Path.cwd())


def dump_report(report: RetentionReport | None) -> dict[str, Any] | None:
    if report is None:
        return None
    return {
        "budget_tokens": report.budget_tokens,
        "retained_tokens": report.retained_tokens,
        "candidates_examined": report.candidates_examined,
        "dropped": report.dropped,
        "capsules": [
            {
                "id": c.id,
                "retrieval_key": c.retrieval_key,
                "excerpt": c.excerpt,
                "tokens": c.tokens,
                "recoverability": c.recoverability,
            }
            for c in report.capsules
        ],
    }


__all__ = [
    "AmbiguousConversation",
    "ChatSession",
    "ConversationNotFound",
    "MemoryStatus",
    "NoBackendConfigured",
    "SessionError",
    "dump_report",
    "resolve_conversation",
]
