"""A chat session: one backend, one memory provider, one conversation at a time.

Usable without any UI: the TUI and print mode both drive it. `send()` runs one
user turn (newt.agent.turn) and yields the plain events of newt.agent.events;
the rest is conversation management (new, resume, history, export), the
/memory figures, /note, /compact and /model.

Everything that changes the conversation (send, compact, new, resume, model,
note, applying a background summary) runs under one lock, so no two of them
interleave: a summary can never land in another conversation's log, and a
/compact can never fold turns under a reply's pre-send guard.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import Any

from newt.agent import events as ev
from newt.agent.background_summary import BackgroundSummary
from newt.agent.capability_tracker import CapabilityTracker
from newt.agent.conversation_edits import ConversationEdits
from newt.agent.conversation_log import ConversationLog
from newt.agent.conversation_settings import SettingsControls
from newt.agent.errors import (
    AmbiguousConversation,
    ConversationNotFound,
    NoBackendConfigured,
    SessionError,
    require_backend,
    resolve_conversation,
)
from newt.agent.export import export_conversation
from newt.agent.mcp_controls import McpControls
from newt.agent.mcp_tools import McpTools
from newt.agent.memory_admin import ForgetReport, MemoryAdmin, MemoryHit
from newt.agent.memory_status import MemoryStatus, add_tool_costs, dump_report, memory_status
from newt.agent.note_command import is_read_only_note_command, run_note_command
from newt.agent.owned_notes import OwnedNotes
from newt.agent.provider_setup import make_client, session_provider
from newt.agent.tools import TOOL_SCHEMAS
from newt.agent.toolset import ToolContext, tool_handlers
from newt.agent.turn import TurnContext, TurnRunner
from newt.agent.turn_attachments import TurnAttachments
from newt.backend.client import ChatClient
from newt.config import Config
from newt.memory import CompactingProvider, MemMessage, MemoryProvider
from newt.memory.capabilities import Anchored, Calibrating, Summarizing
from newt.memory.notes import NoteBook
from newt.memory.restore import conversation_turns_from_log
from newt.recall import RetentionReport
from newt.recall.evidence import EvidenceSource
from newt.recall.parts import RecallParts
from newt.store import Conversation, MemoryRecord, Store
from newt.store.live_log import live_rows
from newt.store.writer_lock import conversation_writer

log = logging.getLogger(__name__)
SUMMARY_REPLY_TOKENS = 600  # a summary's reply cap when the provider gives none


class ChatSession(ConversationEdits, McpControls, SettingsControls):
    def __init__(self, config: Config, store: Store, client: ChatClient) -> None:
        self.config = config
        self.store = store
        self.client = client
        self.model = config.backend.model
        self.base_url = config.backend.base_url
        self.notes = NoteBook()
        self.recall_parts = RecallParts(store, config, self.base_url, self.model)
        self.recall = self.recall_parts.engine
        self.last_retention: RetentionReport | None = None
        self.capabilities = CapabilityTracker(store.capabilities, config, self.base_url, self.model)
        self.log = ConversationLog(store, model=self.model, base_url=self.base_url)
        self.evidence = EvidenceSource(self.recall, store.notes, config, self._request_room)
        self.provider: MemoryProvider = self._make_provider()
        self.lock = asyncio.Lock()
        self.summaries = BackgroundSummary(
            self.lock, self.log, lambda: self.provider, lambda: self._writer(), self._reload_current
        )
        self._owns_store = False
        self._init_settings()  # this conversation's system prompt and parameters
        self._probing: asyncio.Task[None] | None = None
        self._background_pending = False, False  # (probe, embedding catch-up) not started
        self.mcp = McpTools(config.mcp)
        """Tools of the configured MCP servers (newt/mcp); started by the first turn."""
        self.memory_admin = MemoryAdmin(store, lambda: self.recall)
        self.owned_notes = OwnedNotes(
            store.notes,
            lambda: self.conversation.id if self.conversation else None,
            self.memory_admin.correct,
        )
        """The notes as /note and save_note change them (attributed, corrections stick)."""

    # ------------------------------------------------------------------ setup

    @classmethod
    async def open(
        cls,
        config: Config,
        store: Store | None = None,
        *,
        probe: bool = True,
        background_probe: bool = False,
    ) -> ChatSession:
        """Open a session; without `store` it opens (and on close closes) the
        database named by the config.

        `background_probe`: return as soon as the store is open, with the
        budget from the capability cache; the probe (and the embedding queue's
        catch-up) start with `start_background_work()`, which the TUI calls once
        its prompt is painted, or with the first turn, which waits for the probe."""
        require_backend(config)
        owns = store is None
        if store is None:
            store = await Store.open(config.db_path)
        client = make_client(config, config.backend.model)
        session = cls(config, store, client)
        session._owns_store = owns
        try:
            session.notes = await NoteBook.load(store.notes)
            await session._refresh_capabilities(probe=probe and not background_probe)
            if background_probe:
                session._background_pending = probe, True
            else:
                session.recall_parts.start()
        except BaseException:
            await client.aclose()
            if owns:
                await store.close()
            raise
        return session

    async def _refresh_capabilities(self, *, probe: bool) -> None:
        await self.capabilities.refresh(probe=probe)
        self.provider = self._make_provider()
        cap = self.capabilities.cached
        if cap and cap.chars_per_token and isinstance(self.provider, Calibrating):
            self.provider.set_chars_per_token(
                cap.chars_per_token, cap.per_message_tokens, cap.per_reply_tokens
            )

    async def _probe_in_background(self) -> None:
        """The capability probe, after open: a new budget replaces the provider
        (the conversation, if one is loaded by now, is restored into it)."""
        try:
            await self.capabilities.probe()
            async with self.lock:
                budget = self.budget
                await self.capabilities.refresh(probe=False)
                if self.budget == budget:
                    return  # the cache already knew: the provider stays
                await self._refresh_capabilities(probe=False)
                if self.conversation is not None:
                    await self._load(self.conversation)
        except Exception:  # a probe is advice: the cached or default budget stands
            log.warning("capability probe failed", exc_info=True)

    def start_background_work(self) -> None:
        """Start what `open(background_probe=True)` left for later: the probe
        and the embedding queue's catch-up. Idempotent."""
        probe, embeddings = self._background_pending
        self._background_pending = False, False
        if probe:
            self._probing = asyncio.create_task(self._probe_in_background())
        if embeddings:
            self.recall_parts.start()

    async def probed(self) -> None:
        """Wait for a background probe still in flight (see `open`)."""
        self.start_background_work()
        if self._probing is not None:
            await asyncio.shield(self._probing)

    def _request_room(self) -> int:
        """Tokens a request may hold besides the reply reserve."""
        ceiling, reserve = self.capabilities.ceiling_and_reserve()
        return ceiling - reserve

    def _make_provider(self) -> MemoryProvider:
        return session_provider(self.config, self.budget, self.notes, self._summarize)

    @property
    def budget(self) -> Any:
        return self.capabilities.budget

    @property
    def supports_tools(self) -> bool | None:
        return self.capabilities.supports_tools

    @property
    def conversation(self) -> Conversation | None:
        return self.log.conversation

    async def close(self) -> None:
        """Stop a summary in flight (its fallback record is already stored),
        then close the client and, if this session opened it, the store. The
        store is closed whatever happens before (also when the caller's timeout
        cancels us): an open connection's thread would keep the process alive."""
        try:
            if self._probing is not None:
                self._probing.cancel()
                with contextlib.suppress(BaseException):
                    await self._probing
            await self.summaries.cancel()
            with contextlib.suppress(Exception):
                await self.provider.on_session_end([])
            await self.mcp.aclose()  # every MCP server newt started stops with the session
            await self.recall_parts.aclose()
            await self.client.aclose()
        finally:
            if self._owns_store:
                await self.store.close()

    async def __aenter__(self) -> ChatSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---------------------------------------------------------- conversations

    async def new_conversation(self) -> None:
        """Start fresh: the provider is reset, its configuration kept."""
        async with self.lock:
            await self.summaries.cancel()
            self.provider.reset()
            self.log.clear()
            self._settings_for_new()
            self.last_retention = None
            self.mcp.reset_conversation()

    async def resume(self, id_or_prefix: str) -> Conversation:
        conv = await resolve_conversation(self.store, id_or_prefix)
        async with self.lock:
            await self._load(conv)
        return conv

    async def continue_latest(self) -> Conversation | None:
        conv = await self.store.conversations.latest()
        if conv is not None:
            async with self.lock:
                await self._load(conv)
        return conv

    async def _load(self, conv: Conversation) -> None:
        await self.summaries.cancel()
        await self._reload(conv)

    async def _reload(self, conv: Conversation) -> None:
        """Rebuild the working set from the log (the caller holds the lock)."""
        self.provider.reset()
        stored = await self.log.load(conv)
        self.provider.restore_turns(conversation_turns_from_log(stored))
        await self._settings_for_loaded(conv, live_rows(stored))  # before any figure is read
        self.log.track_resident(stored, self.provider.resident_turns())
        self.last_retention = None
        self.mcp.reset_conversation()
        # a restore that had to fold (a crash between a turn and its record)
        await self.log.persist_compaction(self.provider, "restore")
        # A summary the log still owes starts after the next turn, not now:
        # on a one-slot local server it would hold up the user's first reply.

    async def _reload_current(self) -> None:
        if self.conversation is not None:
            await self._reload(self.conversation)

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
        await self.probed()  # the old model's probe must not land after the switch
        async with self.lock:
            self.model = self.config.backend.model = model
            await self.client.aclose()
            self.client = make_client(self.config, model)
            self.capabilities = CapabilityTracker(
                self.store.capabilities, self.config, self.base_url, model
            )
            self.log.model = model
            # vectors belong to a model: the new one embeds into its own space
            await self.recall_parts.aclose()
            self.recall_parts = RecallParts(self.store, self.config, self.base_url, model)
            self.recall = self.evidence.recall = self.recall_parts.engine
            self.recall_parts.start()
            await self._refresh_capabilities(probe=True)
            if self.conversation is not None:
                await self.store.conversations.set_model(self.conversation.id, model, self.base_url)
                await self._load(self.conversation)

    # ---------------------------------------------------------------- memory

    def memory_status(self) -> MemoryStatus:
        status = memory_status(
            self.provider,
            self.budget,
            self.notes,
            self.last_retention,
            self.log.tally,
        )
        if self.supports_tools is not False:
            add_tool_costs(status, self.mcp.schemas(), self.estimate_tokens)
        return status

    async def note(self, arg: str) -> str:
        """The /note sub-language: `<text>`, `replace <old> => <new>`, `remove <text>`, `list`."""
        if is_read_only_note_command(arg):
            return await run_note_command(self.notes, self.owned_notes, arg)
        async with self.lock:
            answer = await run_note_command(self.notes, self.owned_notes, arg)
            await self._after_correction()
            self.recall_parts.stored()
            return answer

    async def _after_correction(self) -> None:
        """A note was replaced or removed: the log was rewritten without its old
        words, so the working set is rebuilt from it (the caller holds the lock)."""
        if self.owned_notes.corrected:
            self.owned_notes.corrected = False
            await self._reload_current()

    async def fetch_record(self, key: str) -> MemoryRecord | None:
        return await self.recall.fetch(key.strip())

    async def compact(self, focus: str | None = None) -> ev.Compacted | None:
        """`/compact [focus]`: fold everything but the newest turn into the record
        and wait for its summary (the user asked for it)."""
        async with self.lock, self._writer():
            if self.conversation is None:
                return None
            if await self.log.changed_elsewhere():
                await self._load(self.conversation)
            if not isinstance(self.provider, CompactingProvider):
                return None
            if not await self.provider.compact(focus or None):
                return None
            await self.summaries.cancel()
            if isinstance(self.provider, Summarizing):
                await self.provider.refresh_summary()
            return await self.log.persist_compaction(self.provider, "manual")

    async def _summarize(self, messages: list[MemMessage]) -> str:
        """Ask for a summary no longer than the record can hold: a longer one
        is cut anyway, and on a one-slot server every token of it is a wait."""
        provider = self.provider
        cap = (
            provider.summary_reply_tokens
            if isinstance(provider, Summarizing)
            else SUMMARY_REPLY_TOKENS
        )
        result = await self.client.complete(
            [{"role": m.role, "content": m.content} for m in messages],
            max_tokens=min(SUMMARY_REPLY_TOKENS, int(cap)),
        )
        return result.text.strip()

    # ---------------------------------------------------------------- the turn

    def estimate_tokens(self, text: str) -> int:
        """The provider's (possibly calibrated) estimate, else chars/chars_per_token."""
        if isinstance(self.provider, Anchored):
            return int(self.provider.tokens_for(text))
        per = max(1, self.config.estimation.chars_per_token)
        return -(-len(text) // per)

    def turn_context(self, attachments: TurnAttachments | None = None) -> TurnContext:
        tools = ToolContext(
            notebook=self.notes,
            notes=self.owned_notes,
            recall=self.recall,
            recall_budget=self.evidence.budget(),
        )
        handlers = tool_handlers(tools)
        schemas = list(TOOL_SCHEMAS)
        if self.incognito:  # nothing of an incognito conversation is remembered
            handlers.pop("save_note", None)
            schemas = [t for t in schemas if t.get("function", {}).get("name") != "save_note"]
        return TurnContext(
            log=self.log,
            provider=self.provider,
            evidence=self.evidence,
            client=self.client,
            capabilities=self.capabilities,
            tools=handlers,
            tool_schemas=schemas,
            system_prompt=self.system_prompt,
            tokens_for=self.estimate_tokens,
            extra_tools=self.mcp if self.mcp.configured else None,
            settings=self.settings,
            attachments=attachments,
        )

    async def send(
        self, text: str, *, replace_last: bool = False
    ) -> AsyncGenerator[ev.AgentEvent, None]:
        """Run one user turn (see newt.agent.turn). Cancelling keeps the partial reply.
        `replace_last`: the turn replaces the last one (regenerate with "", edit)."""
        if not text.strip() and not replace_last:
            raise SessionError("the message is empty")
        await self.probed()  # the turn is budgeted for what the backend said
        # More than one fold's summary owed: it lands before this request
        # (BackgroundSummary.settle); otherwise preempt() below makes it wait.
        await self.summaries.settle(self.config.backend.timeout_s)
        async with self.lock:
            waited: list[int | None] = []
            async with self._writer(waited.append):
                if waited:
                    yield ev.Notice(
                        "another newt was writing to this conversation; continued after it"
                    )
                await self.summaries.preempt()  # the user's turn goes first
                if await self.log.changed_elsewhere() and self.conversation is not None:
                    await self._load(self.conversation)  # build on what the other one wrote
                text, attached = await self._before_turn(text, replace_last)
                runner = TurnRunner(self.turn_context(attached), text)
                try:
                    async with aclosing(runner.run()) as events:
                        async for event in events:
                            if isinstance(event, ev.RetainedEvidence):
                                self.last_retention = event.report
                            elif isinstance(event, ev.TurnStarted):
                                await self._save_new_settings()  # the conversation exists now
                            yield event
                finally:
                    self.last_retention = runner.last_retention
                    self._end_replacement()
                    await self._after_correction()  # the model's save_note replaced one
        self.summaries.start()
        self.recall_parts.stored()  # the turn (and any record) can be embedded now

    # ------------------------------------------------- the user's own memory

    @property
    def incognito(self) -> bool:
        """This conversation (or the next one, before its first turn) is kept out of memory."""
        conv = self.conversation
        return conv.incognito if conv is not None else self.log.incognito

    async def set_incognito(self, on: bool) -> ForgetReport | None:
        """Keep this conversation out of memory (what was indexed of it goes)
        or let memory hold it again from the next turn."""
        async with self.lock:
            conv = self.conversation
            self.log.incognito = on  # and the conversations /new starts after it
            if conv is None:
                return None
            if not on:
                await self.memory_admin.let_in(conv)
                return None
            await self.summaries.cancel()
            report, _ = await self.memory_admin.keep_out(conv)
            return report

    async def recall_preview(self, text: str) -> tuple[RetentionReport | None, str]:
        """`/recall TEXT`: the capsules a message with this text would carry
        now, and their block as sent (empty: none); nothing is counted."""
        if not text.strip():
            raise SessionError("give the text to look up: /recall TEXT")
        async with self.lock:
            return await TurnRunner(self.turn_context(), text).preview_evidence()

    async def search_memory(self, query: str) -> list[MemoryHit]:
        return await self.memory_admin.search(query)

    async def memory_matching(self, query: str) -> list[MemoryHit]:
        return await self.memory_admin.matching(query)

    async def forget(self, keys: list[str]) -> ForgetReport:
        """Forget these records everywhere (newt.agent.memory_admin)."""
        return await self._forgetting(lambda: self.memory_admin.forget(keys))

    async def forget_matching(self, query: str) -> ForgetReport:
        return await self._forgetting(lambda: self.memory_admin.forget_matching(query))

    async def forget_everything(self) -> ForgetReport:
        return await self._forgetting(self.memory_admin.forget_everything)

    async def delete_conversation(self, id_or_prefix: str) -> tuple[Conversation, ForgetReport]:
        """Delete a conversation (unique id prefix) and everything of it; the
        open one is left for a fresh conversation."""
        conv = await resolve_conversation(self.store, id_or_prefix)
        report = await self._forgetting(lambda: self.memory_admin.delete_conversation(conv))
        return conv, report

    async def rename_conversation(self, id_or_prefix: str, title: str) -> Conversation:
        conv = await resolve_conversation(self.store, id_or_prefix)
        try:
            await self.store.conversations.rename(conv.id, title)
        except ValueError as exc:
            raise SessionError(str(exc)) from exc
        if self.conversation is not None and self.conversation.id == conv.id:
            self.conversation.title = " ".join(title.split())
        return await self.store.conversations.get(conv.id) or conv

    async def _forgetting(self, work: Callable[[], Any]) -> ForgetReport:
        """Run a forget under the lock, then reload what the session holds, so
        no later request carries what went."""
        async with self.lock:
            await self.summaries.cancel()  # a summary in flight may quote it
            report, done = await work()
            await self._after_forget(done.touched, deleted=done.conversations > 0)
        return report

    async def _after_forget(self, touched: set[str], *, deleted: bool) -> None:
        await self.notes.reload(self.store.notes)  # in place: the provider reads this book
        self.last_retention = None
        conv = self.conversation
        if conv is None:
            return
        current = await self.store.conversations.get(conv.id)
        if current is None:  # deleted: the session goes on in a fresh conversation
            self.provider.reset()
            self.log.clear()
            self._settings_for_new()
            self.mcp.reset_conversation()
        elif conv.id in touched:
            await self._reload(current)
        else:
            conv.title = current.title

    def _writer(self, on_wait: Callable[[int | None], object] | None = None) -> Any:
        """This conversation's cross-process writer lock (none needed before it exists)."""
        if self.conversation is None:
            return contextlib.nullcontext()
        return conversation_writer(self.store.db.path, self.conversation.id, on_wait=on_wait)


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
