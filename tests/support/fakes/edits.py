"""FakeEdits, the fake EditsApi: the open conversation's turns as the UI reads them.

History, the last prompt and a fork come from the shared FakeState's open
conversation, so what FakeTurns stored is what /history, up-arrow and /fork see.
No file is read: every `@path` attachment passes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from newt.agent.display import HistoryEntry, history_entries
from newt.store import Conversation
from tests.support.fakes.state import FakeState

if TYPE_CHECKING:
    from newt.ui.session_api import EditsApi


@dataclass
class FakeEdits:
    """The open conversation's history and last prompt (LookupError before a turn), and a
    fork that opens a copy of its first `at` turns (all without `at`) naming its parent."""

    state: FakeState

    async def history(self) -> list[HistoryEntry]:
        return history_entries(self.state.open_turns())

    async def last_prompt(self) -> str:
        prompts = [t.user for t in self.state.open_turns() if t.kind == "turn"]
        if not prompts:
            raise LookupError("nothing to regenerate yet")
        return prompts[-1]

    def check_attachments(self, text: str) -> None:
        return None  # no files are read: every `@path` passes

    async def fork(self, at: int | None) -> Conversation:
        state = self.state
        if state.conversation is None:
            raise LookupError("nothing to fork yet")
        parent = state.conversation
        turns = [t for t in state.saved[parent.id] if t.kind == "turn"]
        conv_id = state.new_id()
        state.add_conversation(conv_id, parent.title, list(turns[: at or len(turns)]))
        state.conversation = replace(
            state.listed(conv_id), parent_id=parent.id, parent_title=parent.title
        )
        return state.conversation


if TYPE_CHECKING:

    def _fits(edits: FakeEdits) -> EditsApi:
        return edits  # mypy: the fake is all the UI asks of the open conversation's turns
