"""FakeConversations, the fake ConversationsApi: which saved conversation is open.

Opens, lists, renames and exports the conversations in the shared FakeState
(filled by FakeState.add_conversation or by turns), so the /resume picker,
--resume and --continue run against known ids and titles without a store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from newt.store import Conversation
from tests.support.fakes.state import FakeState

if TYPE_CHECKING:
    from newt.ui.session_api import ConversationsApi


@dataclass
class FakeConversations:
    """Open a conversation by id prefix (LookupError unless exactly one matches), the
    latest, or none; search titles and turns; rename; export as "exported as <fmt>"."""

    state: FakeState

    async def new_conversation(self) -> None:
        self.state.conversation = None
        self.state.last_retention = None

    async def resume(self, id_or_prefix: str) -> Conversation:
        self.state.conversation = self.state.listed(self.state.find(id_or_prefix))
        return self.state.conversation

    async def continue_latest(self) -> Conversation | None:
        if not self.state.saved:
            return None
        return await self.resume(list(self.state.saved)[-1])

    async def search_conversations(self, text: str) -> list[Conversation]:
        out = []
        for conv_id, turns in self.state.saved.items():
            hay = self.state.titles[conv_id] + " ".join(t.user + t.assistant for t in turns)
            if text.lower() in hay.lower():
                out.append(self.state.listed(conv_id))
        return out

    async def rename_conversation(self, id_or_prefix: str, title: str) -> Conversation:
        conv_id = self.state.find(id_or_prefix)
        self.state.titles[conv_id] = title
        renamed = self.state.listed(conv_id)
        if self.state.conversation is not None and self.state.conversation.id == conv_id:
            self.state.conversation = renamed
        return renamed

    async def export(self, fmt: str) -> str:
        return f"exported as {fmt}"


if TYPE_CHECKING:

    def _fits(conversations: FakeConversations) -> ConversationsApi:
        return conversations  # mypy: the fake is all the UI asks of the conversation list
