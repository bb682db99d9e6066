"""A chat session: one backend, one memory provider, one conversation at a time.

Usable without any UI: the TUI and print mode both drive it. It is where the
parts are made, in this order, each handed only what it uses (the graph is in
docs/design.md section 2, held by tests/unit/project/test_part_graph.py), and
its callers use the parts themselves (the UI through one Protocol per part,
newt.ui.session_api):

- `gate` (TurnGate): the one lock everything that changes the conversation passes;
- `link` (ModelLink): the model: client, capabilities, provider, recall;
- `settings_controls` (SettingsControls): the settings, presets, model list;
- `conversations` (Conversations): new, resume, list, rename, export, summaries;
- `edits` (Edits): history, fork, the last prompt, attachments;
- `memory_records` (MemoryRecords): search and matching of what memory holds;
- `memory_commands` (MemoryCommands): /note and /compact;
- `forgetting` (Forgetting): forget, delete, incognito;
- `mcp_controls` (McpControls): the MCP tools' approval and switches;
- `background` (BackgroundProbe): the probe after a quick open;
- `turns` (Turns): send, regenerate, edit, the /recall preview.

The session itself keeps what no one part owns: opening and closing, the
model switch (which waits for the old model's probe), a preset (it may switch
the model and turn incognito on), an import, what print mode leaves on exit,
the memory status (the provider's, the notes', the tools') and what the header
reads.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from newt.agent.conversation.log import ConversationLog
from newt.agent.errors import (
    AmbiguousConversation,
    ConversationNotFound,
    NoBackendConfigured,
    SessionError,
    require_backend,
    resolve_conversation,
)
from newt.agent.history_import import ImportProgress, ImportReport, import_history
from newt.agent.own_memory.owned_notes import OwnedNotes
from newt.agent.own_memory.records import MemoryRecords
from newt.agent.own_memory.status import MemoryStatus, add_tool_costs, dump_report, memory_status
from newt.agent.session.background_probe import BackgroundProbe
from newt.agent.session.conversations import Conversations
from newt.agent.session.edits import Edits
from newt.agent.session.exit_work import Handoff
from newt.agent.session.forgetting import Forgetting
from newt.agent.session.mcp_controls import McpControls
from newt.agent.session.memory_commands import MemoryCommands
from newt.agent.session.model_link import ModelLink
from newt.agent.session.provider_setup import make_client
from newt.agent.session.settings import Preset, SettingsControls
from newt.agent.session.turn_gate import TurnGate
from newt.agent.session.turn_requests import TurnRequests
from newt.agent.session.turns import Turns
from newt.agent.tools.mcp import McpTools
from newt.agent.turn.model_facts import CapabilityTracker
from newt.backend.client import ChatClient
from newt.config import Config
from newt.memory import MemoryProvider
from newt.memory.notes import NoteBook
from newt.recall import RecallEngine, RetentionReport
from newt.recall.service import RecallParts
from newt.store import Conversation, MemoryRecord, Store
from newt.store.conversation_store import ConversationStore


class ChatSession:
    def __init__(self, config: Config, store: Store, client: ChatClient) -> None:
        self.config = config
        self.store = store
        self._owns_store = False
        self.gate = gate = TurnGate()
        self.notes = notes = NoteBook()  # loaded in place by open(): every part holds this one
        self.link = link = ModelLink(config, store, client, notes)
        self.base_url = link.base_url
        self.evidence = link.evidence
        self.conv_store = held = ConversationStore(store)  # the database, or memory (incognito)
        self.log = log = ConversationLog(held, model=link.model, base_url=self.base_url)
        self.mcp = McpTools(config.mcp)  # the MCP servers' tools, started by the first turn
        self.mcp_controls = McpControls(self.mcp)
        self.settings_controls = settings = SettingsControls(config, held, gate, link, log)
        self.conversations = conversations = Conversations(
            gate, held, log, settings, self.mcp, link
        )
        self.summaries = conversations.summaries
        self.edits = edits = Edits(gate, conversations, link, settings)
        self.memory_records = records = MemoryRecords(store, lambda: link.recall)  # /model swaps it
        # as /note and save_note change them (attributed to the conversation)
        self.owned_notes = owned = OwnedNotes(store.notes, log, records.correct)
        self.memory_commands = MemoryCommands(gate, conversations, owned, link)
        self.forgetting = Forgetting(gate, conversations, records, notes)
        self.background = background = BackgroundProbe(gate, link, conversations)
        requests = TurnRequests(link, settings, log, owned, self.mcp)
        self.turns = Turns(gate, conversations, background, edits, requests, link)

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

    @property
    def budget(self) -> Any:
        return self.link.budget

    @property
    def supports_tools(self) -> bool | None:
        return self.link.supports_tools

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
            await session.notes.reload(store.notes)
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

    # ------------------------------------------------- what the header reads
    @property
    def conversation(self) -> Conversation | None:
        return self.log.conversation

    @property
    def last_retention(self) -> RetentionReport | None:
        """The evidence the last turn carried (None after a switch of conversation)."""
        return self.conversations.last_retention

    @property
    def incognito(self) -> bool:
        return self.forgetting.incognito

    @property
    def unsaved(self) -> bool:  # nothing of it is on disk (newt.store.conversation_store)
        return self.forgetting.unsaved

    # ------------------------------------------- what no one part owns alone
    async def apply_preset(
        self, name: str, *, for_new: bool = False, switch_model: bool = True
    ) -> Preset:
        """`/preset NAME`: the preset's model (if it names one), then its settings.
        With `for_new` (`newt --preset`), new conversations start with it too;
        `newt --preset` chose the model before the session opened. A preset with
        `incognito = true` turns incognito on (what was indexed of this
        conversation goes, and /new keeps it on): the user chose it in the config,
        so applying it never leaves a trace in memory; it never turns it off."""
        preset = self.settings_controls.find_preset(name)
        if switch_model and preset.model and preset.model != self.model:
            await self.set_model(preset.model)
        await self.settings_controls.use_preset(preset, for_new=for_new)
        if preset.incognito and not self.incognito:
            await self.forgetting.set_incognito(True)
        return preset

    async def set_model(self, model: str) -> None:
        """Switch model; the budget is re-resolved for it and the history restored."""
        model = model.strip()
        if not model:
            raise SessionError("give a model name: /model NAME")
        await self.probed()  # the old model's probe must not land after the switch
        await self.conversations.switch_model(model)

    def memory_status(self) -> MemoryStatus:
        status = memory_status(
            self.provider, self.budget, self.notes, self.last_retention, self.log.tally
        )
        if self.supports_tools is not False:
            add_tool_costs(status, self.mcp.schemas(), self.estimate_tokens)
        return status

    async def finish_owed(self, handoff: Handoff | None, *, embed_within_s: float) -> None:
        """Before the process exits (print mode): the summary a fold still owes
        is handed to `handoff` (a detached writer) or, without one, written now;
        the new records are embedded for at most `embed_within_s`, and what is
        left is handed off too. Why here: what is owed is the session's to know."""
        owing = self.provider.summarizing()
        conv = self.conversation
        if owing is not None and owing.summary_pending and conv is not None and not self.unsaved:
            if handoff is not None:
                handoff.summary(conv.id, self.client.chat_head)
            else:
                self.summaries.start()
                await self.summaries.wait(self.config.backend.timeout_s)
        caught_up = await self.recall_parts.catch_up(embed_within_s)
        if not caught_up and handoff is not None:
            handoff.vectors()

    async def import_history(
        self, path: Path, *, source: str | None = None, progress: ImportProgress | None = None
    ) -> ImportReport:
        """Another app's history into this database (newt.agent.history_import)."""
        return await import_history(
            self.store, self.recall_parts, path, source=source, progress=progress
        )

    async def fetch_record(self, key: str) -> MemoryRecord | None:
        """A record whole, by its key or the first words of its line in a capsule."""
        return await self.recall.fetch(key.strip())

    def estimate_tokens(self, text: str) -> int:
        return self.link.estimate_tokens(text)

    async def count_tokens(self, text: str) -> int:
        """The server's own count where it gives one (newt's llama-server), else the
        estimate: what a message that may not fit is judged by."""
        return await self.link.count_tokens(text)


__all__ = [
    "AmbiguousConversation",
    "ChatSession",
    "ConversationNotFound",
    "Handoff",
    "MemoryStatus",
    "NoBackendConfigured",
    "SessionError",
    "dump_report",
    "resolve_conversation",
]
