"""A chat session: one backend, one memory provider, one conversation at a time.

Usable without any UI: the TUI and print mode both drive it. `send()` runs one
user turn (newt.agent.turn) and yields the plain events of newt.agent.events;
the rest is conversation management (new, resume, history, export), the
/memory figures, /note, /compact and /model.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from newt.agent import events as ev
from newt.agent.export import export_conversation
from newt.agent.turn import REPLY_RESERVE_MAX, TurnRunner
from newt.backend import capabilities as caps
from newt.backend.client import ChatClient
from newt.backend.errors import ContextLengthExceededError
from newt.backend.probe import probe_context_window
from newt.config import Config
from newt.memory import MemMessage, MemoryProvider, create_provider
from newt.memory.notes import NoteBook
from newt.memory.restore import conversation_turns_from_log
from newt.recall import RecallEngine, RetentionReport
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
        self._saved_estimate: tuple[float, ...] | None = None
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
            self._apply_calibration(
                cap.chars_per_token, cap.per_message_tokens, cap.per_reply_tokens
            )

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
            # learn the estimate from the backend's own reports (see newt.memory.calibration)
            calibrate=True,
        )
        return provider

    def _apply_calibration(
        self, chars_per_token: float, per_message: float | None, per_reply: float | None
    ) -> None:
        calibrate = getattr(self.provider, "set_chars_per_token", None)
        if calibrate is not None:
            calibrate(chars_per_token, per_message, per_reply)

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
        return await self.persist_compaction("manual")

    async def persist_compaction(self, reason: str) -> ev.Compacted | None:
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

    # ---------------------------------------------------- used by the turn

    @property
    def system_prompt(self) -> str:
        return self._system_prompt

    async def ensure_conversation(self) -> Conversation:
        if self.conversation is None:
            self.conversation = await self.store.conversations.create(
                model=self.model, base_url=self.base_url
            )
        return self.conversation

    def estimate_tokens(self, text: str) -> int:
        """The provider's (possibly calibrated) estimate, else chars/chars_per_token."""
        tokens_for = getattr(self.provider, "tokens_for", None)
        if tokens_for is not None:
            return int(tokens_for(text))
        per = max(1, self.config.estimation.chars_per_token)
        return -(-len(text) // per)

    def ceiling_and_reserve(self) -> tuple[int, int]:
        """The live context ceiling and the tokens kept free for the reply."""
        ceiling = self.live_ceiling or self.budget.context_tokens
        return ceiling, min(REPLY_RESERVE_MAX, ceiling // 4)

    def resident_keys(self) -> set[str]:
        return set(self._resident_keys)

    def note_resident(self, key: str) -> None:
        self._resident_keys.append(key)

    async def record_overflow(self, exc: ContextLengthExceededError) -> None:
        overflow_at = exc.prompt_tokens or exc.context_window or self.budget.context_tokens
        await caps.record_overflow(self.store.capabilities, self.base_url, self.model, overflow_at)
        cap = await self.store.capabilities.get(self.base_url, self.model)
        self.live_ceiling = self._ceiling_from(cap)

    async def record_tools_unsupported(self) -> None:
        self.supports_tools = False
        await caps.record_tools_unsupported(self.store.capabilities, self.base_url, self.model)

    async def record_accepted_prompt(self, prompt_tokens: int) -> None:
        await caps.record_accepted_prompt(
            self.store.capabilities, self.base_url, self.model, prompt_tokens
        )

    async def remember_estimate(self) -> None:
        """Keep the learned estimate (ratio and template glue) per model for next time."""
        ratio = getattr(self.provider, "learned_chars_per_token", None)
        glue = getattr(self.provider, "learned_glue", None)
        if ratio is None or glue is None:
            return
        learned = (float(ratio), *glue)
        if learned == self._saved_estimate:  # skip the read when nothing moved
            return
        cap = await self.store.capabilities.get(self.base_url, self.model)
        if cap is None:
            return
        cap.chars_per_token, cap.per_message_tokens, cap.per_reply_tokens = learned
        await self.store.capabilities.put(cap)
        self._saved_estimate = learned

    # ------------------------------------------------------------------ turn

    async def send(self, text: str) -> AsyncGenerator[ev.AgentEvent, None]:
        """Run one user turn (see newt.agent.turn). Cancelling keeps the partial reply."""
        if not text.strip():
            raise SessionError("the message is empty")
        async with aclosing(TurnRunner(self, text).run()) as events:
            async for event in events:
                yield event


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
