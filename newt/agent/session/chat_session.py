"""A chat session: one backend, one memory provider, one conversation at a time.

Usable without any UI: the TUI and print mode both drive it. It is composed of
parts, each handed what it needs, and its methods forward to them: `link` (the
model: client, capabilities, provider, recall), `turns` (send), `lifecycle`
(new, resume, summaries, the writer lock), `edits` (regenerate, edit, fork),
`settings_controls`, `commands` (/note, /compact), `forgetting` (forget,
incognito), `mcp_controls` and `background` (the probe after a quick open).

Everything that changes the conversation (send, compact, new, resume, model,
note, applying a background summary) runs under one lock, so no two of them
interleave: a summary can never land in another conversation's log, and a
/compact can never fold turns under a reply's pre-send guard.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import Any

from newt.agent import events as ev
from newt.agent.display import HistoryEntry
from newt.agent.errors import (
    AmbiguousConversation,
    ConversationNotFound,
    NoBackendConfigured,
    SessionError,
    require_backend,
    resolve_conversation,
)
from newt.agent.own_memory.commands import MemoryCommands
from newt.agent.own_memory.forgetting import Forgetting
from newt.agent.own_memory.owned_notes import OwnedNotes
from newt.agent.own_memory.records import ForgetReport, MemoryAdmin, MemoryHit
from newt.agent.own_memory.status import MemoryStatus, add_tool_costs, dump_report, memory_status
from newt.agent.session.background_probe import BackgroundProbe
from newt.agent.session.conversation_log import ConversationLog
from newt.agent.session.conversation_store import ConversationStore
from newt.agent.session.edits import ConversationEdits
from newt.agent.session.lifecycle import ConversationLifecycle
from newt.agent.session.mcp_controls import McpControls
from newt.agent.session.model_facts import CapabilityTracker
from newt.agent.session.model_link import ModelLink
from newt.agent.session.provider_setup import make_client
from newt.agent.session.settings import ChatSettings, ModelChoice, SettingsControls
from newt.agent.session.turns import SessionTurns
from newt.agent.tools.approval import Approver
from newt.agent.tools.mcp import McpTools
from newt.agent.turn.image_parts import TurnAttachments
from newt.agent.turn.runner import TurnContext
from newt.backend.client import ChatClient
from newt.chat_settings import Preset
from newt.config import Config
from newt.memory import MemoryProvider
from newt.memory.notes import NoteBook
from newt.recall import RecallEngine, RetentionReport
from newt.recall.service import RecallParts
from newt.store import Conversation, MemoryRecord, Store


class ChatSession:
    def __init__(self, config: Config, store: Store, client: ChatClient) -> None:
        self.config = config
        self.store = store
        self.notes = NoteBook()
        self.link = link = ModelLink(config, store, client, lambda: self.notes)
        self.base_url = link.base_url
        self.evidence = link.evidence
        self.conv_store = held = ConversationStore(store)  # the database, or memory (incognito)
        self.log = log = ConversationLog(held, model=link.model, base_url=self.base_url)
        self.lock = lock = asyncio.Lock()
        self._owns_store = False
        self.mcp = McpTools(config.mcp)  # the MCP servers' tools, started by the first turn
        self.mcp_controls = McpControls(self.mcp)
        self.settings_controls = settings = SettingsControls(
            config,
            held,
            lock,
            link,
            conversation=lambda: log.conversation,
            switch_model=self.set_model,
            incognito=lambda: self.forgetting.incognito,
            keep_out=lambda: self.forgetting.set_incognito(True),
        )
        self.lifecycle = ConversationLifecycle(lock, held, log, settings, self.mcp, link)
        self.summaries = summaries = self.lifecycle.summaries
        self.edits = ConversationEdits(
            lock, log, held, summaries, self.lifecycle, link, settings.reapply_anchor_shift
        )
        self.memory_admin = MemoryAdmin(store, lambda: link.recall)
        self.owned_notes = OwnedNotes(  # as /note and save_note change them (attributed)
            store.notes,
            lambda: self.conversation.id if self.conversation else None,
            self.memory_admin.correct,
        )
        self.commands = MemoryCommands(
            lock, log, summaries, self.owned_notes, self.lifecycle, link, lambda: self.notes
        )
        self.forgetting = Forgetting(
            lock, held, log, summaries, self.memory_admin, lambda: self.notes, self.lifecycle
        )
        self.background = BackgroundProbe(lock, link, self.lifecycle)
        self.turns = SessionTurns(
            config,
            lock,
            log,
            summaries,
            link,
            self.lifecycle,
            self.edits,
            settings,
            self.commands,
            self.background,
            self.mcp,
            self.owned_notes,
            notes=lambda: self.notes,
            incognito=lambda: self.forgetting.incognito,
        )

    # what /model swaps: read through the link, so every part sees the current one

    @property
    def model(self) -> str:
        return self.link.model

    @property
    def client(self) -> ChatClient:
        return self.link.client

    @property
    def capabilities(self) -> CapabilityTracker:
        return self.link.capabilities

    @property
    def provider(self) -> MemoryProvider:
        return self.link.provider

    @property
    def recall_parts(self) -> RecallParts:
        return self.link.recall_parts

    @property
    def recall(self) -> RecallEngine:
        return self.link.recall

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
        database named by the config. `background_probe`: return with the cached
        budget, the probe left for `start_background_work()` (background_probe)."""
        require_backend(config)
        owns = store is None
        if store is None:
            store = await Store.open(config.db_path)
        client = make_client(config, config.backend.model)
        session = cls(config, store, client)
        session._owns_store = owns
        try:
            session.notes = await NoteBook.load(store.notes)
            await session.link.refresh(probe=probe and not background_probe)
            if background_probe:
                session.background.defer(probe=probe)
            else:
                session.recall_parts.start()
        except BaseException:
            await client.aclose()
            if owns:
                await store.close()
            raise
        return session

    def start_background_work(self) -> None:
        self.background.start()

    async def probed(self) -> None:
        await self.background.probed()

    @property
    def budget(self) -> Any:
        return self.link.budget

    @property
    def supports_tools(self) -> bool | None:
        return self.link.supports_tools

    @property
    def conversation(self) -> Conversation | None:
        return self.log.conversation

    async def close(self) -> None:
        """Stop a summary in flight (its fallback record is already stored),
        then close the client and, if this session opened it, the store. The
        store is closed whatever happens before (also when the caller's timeout
        cancels us): an open connection's thread would keep the process alive."""
        try:
            await self.background.cancel()
            await self.summaries.cancel()
            with contextlib.suppress(Exception):
                await self.provider.on_session_end([])
            await self.mcp.aclose()  # every MCP server newt started stops with the session
            await self.link.aclose()
        finally:
            await self.conv_store.close()  # an incognito conversation goes with it
            if self._owns_store:
                await self.store.close()

    async def __aenter__(self) -> ChatSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---------------------------------------------------------- conversations
    async def new_conversation(self) -> None:
        await self.lifecycle.new_conversation()

    async def resume(self, id_or_prefix: str) -> Conversation:
        return await self.lifecycle.resume(id_or_prefix)

    async def continue_latest(self) -> Conversation | None:
        return await self.lifecycle.continue_latest()

    async def rename_conversation(self, id_or_prefix: str, title: str) -> Conversation:
        return await self.lifecycle.rename_conversation(id_or_prefix, title)

    @property
    def last_retention(self) -> RetentionReport | None:
        """The evidence the last turn carried (None after a switch of conversation)."""
        return self.lifecycle.last_retention

    @last_retention.setter
    def last_retention(self, report: RetentionReport | None) -> None:
        self.lifecycle.last_retention = report

    async def list_conversations(self) -> list[Conversation]:
        return await self.store.conversations.list()

    async def search_conversations(self, text: str) -> list[Conversation]:
        return await self.store.conversations.search(text)

    async def export(self, fmt: str = "md") -> str:
        return await self.lifecycle.export(fmt)

    async def set_model(self, model: str) -> None:
        """Switch model; the budget is re-resolved for it and the history restored."""
        model = model.strip()
        if not model:
            raise SessionError("give a model name: /model NAME")
        await self.probed()  # the old model's probe must not land after the switch
        await self.lifecycle.switch_model(model)

    # ---------------------------------------------- regenerate, edit and fork
    def regenerate(self) -> AsyncGenerator[ev.AgentEvent, None]:
        """Run the last turn's prompt again; the new reply replaces the old turn."""
        return self.send("", replace_last=True)

    def edit_last(self, text: str) -> AsyncGenerator[ev.AgentEvent, None]:
        """Send `text` in place of the last prompt; the new turn replaces the old one."""
        if not text.strip():
            raise SessionError("the message is empty")
        return self.send(text, replace_last=True)

    async def history(self) -> list[HistoryEntry]:
        return await self.edits.history()

    async def last_prompt(self) -> str:
        return await self.edits.last_prompt()

    def check_attachments(self, text: str) -> None:
        self.edits.check_attachments(text)

    async def fork(self, at: int | None = None) -> Conversation:
        return await self.edits.fork(at)

    # ---------------------------------------------------------- the settings
    @property
    def settings(self) -> ChatSettings:
        return self.settings_controls.settings

    @property
    def presets(self) -> dict[str, Preset]:
        return self.settings_controls.presets

    @property
    def system_prompt(self) -> str:
        return self.settings_controls.system_prompt

    @property
    def default_system_prompt(self) -> str:
        return self.settings_controls.default_system_prompt

    async def update_settings(self, settings: ChatSettings) -> None:
        await self.settings_controls.update_settings(settings)

    def find_preset(self, name: str) -> Preset:
        return self.settings_controls.find_preset(name)

    async def apply_preset(
        self, name: str, *, for_new: bool = False, switch_model: bool = True
    ) -> Preset:
        return await self.settings_controls.apply_preset(
            name, for_new=for_new, switch_model=switch_model
        )

    async def list_models(self) -> list[ModelChoice]:
        return await self.settings_controls.list_models()

    # ---------------------------------------------------------------- memory
    def memory_status(self) -> MemoryStatus:
        status = memory_status(
            self.provider, self.budget, self.notes, self.last_retention, self.log.tally
        )
        if self.supports_tools is not False:
            add_tool_costs(status, self.mcp.schemas(), self.estimate_tokens)
        return status

    async def note(self, arg: str) -> str:
        return await self.commands.note(arg)

    async def fetch_record(self, key: str) -> MemoryRecord | None:
        return await self.recall.fetch(key.strip())

    async def compact(self, focus: str | None = None) -> ev.Compacted | None:
        return await self.commands.compact(focus)

    # ---------------------------------------------------------------- the turn
    def estimate_tokens(self, text: str) -> int:
        return self.link.estimate_tokens(text)

    def turn_context(self, attachments: TurnAttachments | None = None) -> TurnContext:
        return self.turns.turn_context(attachments)

    def send(self, text: str, *, replace_last: bool = False) -> AsyncGenerator[ev.AgentEvent, None]:
        """Run one user turn (newt.agent.session.turns). Cancelling keeps the partial reply."""
        return self.turns.send(text, replace_last=replace_last)

    async def recall_preview(self, text: str) -> tuple[RetentionReport | None, str]:
        return await self.turns.recall_preview(text)

    # ------------------------------------------------- the user's own memory
    @property
    def incognito(self) -> bool:
        return self.forgetting.incognito

    @property
    def unsaved(self) -> bool:  # nothing of it is on disk (newt.agent.session.conversation_store)
        return self.forgetting.unsaved

    async def set_incognito(self, on: bool) -> ForgetReport | None:
        return await self.forgetting.set_incognito(on)

    async def search_memory(self, query: str) -> list[MemoryHit]:
        return await self.memory_admin.search(query)

    async def memory_matching(self, query: str) -> list[MemoryHit]:
        return await self.memory_admin.matching(query)

    async def forget(self, keys: list[str]) -> ForgetReport:
        return await self.forgetting.forget(keys)

    async def forget_matching(self, query: str, *, sentences: bool = False) -> ForgetReport:
        return await self.forgetting.forget_matching(query, sentences=sentences)

    async def forget_everything(self) -> ForgetReport:
        return await self.forgetting.forget_everything()

    async def delete_conversation(self, id_or_prefix: str) -> tuple[Conversation, ForgetReport]:
        return await self.forgetting.delete_conversation(id_or_prefix)

    # ------------------------------------------------------------- MCP tools
    def set_tool_approver(self, approver: Approver | None) -> None:
        self.mcp_controls.set_tool_approver(approver)

    def tools_report(self) -> str:
        return self.mcp_controls.tools_report()

    def set_tool_enabled(self, name: str, enabled: bool) -> bool:
        return self.mcp_controls.set_tool_enabled(name, enabled)


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
