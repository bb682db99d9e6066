"""The model a session talks to, and what is built for it (ChatSession owns one).

One model on one backend: its chat client, what newt knows the backend can do
(newt.agent.turn.model_facts: the budget, tools, the live ceiling), the memory
provider budgeted for that window, and the recall parts with the evidence a
turn draws from them (vectors belong to a model: each embeds into its own
space). `/model` replaces them all (`switch`); a probe that finds a new budget
rebuilds the provider (`refresh`). The session's other parts are handed this
object and read what they need from it each time, so they always see the
current ones.
"""

from __future__ import annotations

from typing import Any

from newt.agent import events as ev
from newt.agent.session.provider_setup import make_client, session_provider
from newt.agent.session.summary_request import summary_messages
from newt.agent.turn.model_facts import CapabilityTracker
from newt.backend.client import ChatClient
from newt.backend.tokenize import server_count
from newt.config import Config
from newt.local.models import speeds
from newt.local.server import cache_dir
from newt.memory import MemMessage, MemoryProvider
from newt.memory.notes import NoteBook
from newt.recall.evidence import EvidenceSource
from newt.recall.service import RecallParts
from newt.store import Store

SUMMARY_REPLY_TOKENS = 600  # a summary's reply cap when the provider gives none


class ModelLink:
    def __init__(self, config: Config, store: Store, client: ChatClient, notes: NoteBook) -> None:
        self.config = config
        self.store = store
        self.client = client
        self.notes = notes
        """The session's notebook (the provider puts it in the system message)."""
        self.model = config.backend.model
        self.base_url = config.backend.base_url
        self.recall_parts = RecallParts(store, config, self.base_url, self.model)
        self.recall = self.recall_parts.engine
        self.capabilities = CapabilityTracker(store.capabilities, config, self.base_url, self.model)
        self.evidence = EvidenceSource(self.recall, store.notes, config, self.request_room)
        self.provider: MemoryProvider = self._make_provider()

    @property
    def budget(self) -> Any:
        return self.capabilities.budget

    @property
    def supports_tools(self) -> bool | None:
        return self.capabilities.supports_tools

    def request_room(self) -> int:
        """Tokens a request may hold besides the reply reserve."""
        ceiling, reserve = self.capabilities.ceiling_and_reserve()
        return ceiling - reserve

    def context_tokens(self) -> int:
        return self.capabilities.ceiling_and_reserve()[0]

    def estimate_tokens(self, text: str) -> int:
        """The provider's (possibly calibrated) estimate, else chars/chars_per_token."""
        anchored = self.provider.anchored()
        if anchored is not None:
            return int(anchored.tokens_for(text))
        per = max(1, self.config.estimation.chars_per_token)
        return -(-len(text) // per)

    async def count_tokens(self, text: str) -> int:
        """The tokens of `text` as newt's own llama-server counts them (its
        /tokenize), else the estimate: for a message that may not fit."""
        if self.config.server_context_tokens:
            counted = await server_count(self.config.backend.base_url, text)
            if counted is not None:
                return counted
        return self.estimate_tokens(text)

    def content_tokens(self, text: str) -> int:
        """The same estimate for a piece of a message, without its glue."""
        anchored = self.provider.anchored()
        if anchored is not None:
            return int(anchored.content_tokens(text))
        per = max(1, self.config.estimation.chars_per_token)
        return -(-len(text) // per)

    async def refresh(self, *, probe: bool) -> None:
        """Re-resolve what the backend can do (probing it, if asked) and build
        the provider for that budget, with the estimate learned so far."""
        await self.capabilities.refresh(probe=probe)
        self.provider = self._make_provider()
        cap = self.capabilities.cached
        learner = self.provider.calibrating()
        if cap and cap.chars_per_token and learner is not None:
            learner.set_chars_per_token(
                cap.chars_per_token, cap.per_message_tokens, cap.per_reply_tokens
            )

    async def switch(self, model: str) -> None:
        """Talk to `model` from now on: a new client, capabilities, recall and
        provider (the caller holds the session gate and restores the history)."""
        self.model = self.config.backend.model = model
        self.base_url = self.config.backend.base_url  # a warm local model has a port of its own
        await self.client.aclose()
        self.client = make_client(self.config, model)
        self.capabilities = CapabilityTracker(
            self.store.capabilities, self.config, self.base_url, model
        )
        await self.recall_parts.aclose()
        self.recall_parts = RecallParts(self.store, self.config, self.base_url, model)
        self.recall = self.evidence.recall = self.recall_parts.engine
        self.recall_parts.start()
        await self.refresh(probe=True)

    async def aclose(self) -> None:
        await self.recall_parts.aclose()
        await self.client.aclose()

    def _make_provider(self) -> MemoryProvider:
        return session_provider(self.config, self.budget, self.notes, self._summarize)

    def keep_speed(self, done: ev.TurnDone) -> None:
        """A model newt runs: what it read and wrote a second in a completed
        turn, for the model lists to show (newt.local.models.speeds)."""
        write = done.stats.tokens_per_second if done.stats is not None else None
        read = self.capabilities.prompt_rate
        if self.config.server_context_tokens and done.status == "complete" and read and write:
            speeds.record(cache_dir(), self.config.backend.model, read, write)

    async def _summarize(self, messages: list[MemMessage]) -> str:
        """Ask for a summary no longer than the record can hold: a longer one
        is cut anyway, and on a one-slot server every token of it is a wait.
        It starts as the last chat request did (agent/session/summary_request.py)."""
        owing = self.provider.summarizing()
        cap = owing.summary_reply_tokens if owing is not None else SUMMARY_REPLY_TOKENS
        head = self.client.chat_head
        tools = head.tools if head is not None else None
        result = await self.client.complete(
            summary_messages(messages, head),
            tools=tools,
            tool_choice="none" if tools else None,  # a summary, not a call
            max_tokens=min(SUMMARY_REPLY_TOKENS, int(cap)),
        )
        return result.text.strip()
