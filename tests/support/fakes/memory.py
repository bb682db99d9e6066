"""The fakes of the memory parts: FakeMemoryCommands, FakeMemoryRecords, FakeForgetting.

/note keeps its notes here, /compact always folds, lookups find nothing and
forgetting reports nothing forgotten, except a deleted conversation, which leaves
the shared FakeState: enough for the UI's commands and screens to run their paths
without a store or a model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from newt.agent import events as ev
from newt.agent.own_memory.records import ForgetReport, MemoryHit
from newt.store import Conversation
from tests.support.fakes.state import FakeState

if TYPE_CHECKING:
    from newt.ui.session_api import ForgettingApi, MemoryCommandsApi, MemoryRecordsApi


@dataclass
class FakeMemoryCommands:
    """/note saves its text to `notes` ("list" lists them); /compact returns one fixed fold."""

    notes: list[str] = field(default_factory=list)

    async def note(self, arg: str) -> str:
        if arg == "list":
            return "\n".join(self.notes) or "no notes yet"
        self.notes.append(arg)
        return "saved note"

    async def compact(self, focus: str | None) -> ev.Compacted | None:
        return ev.Compacted(
            "[CONTEXT COMPACTION — REFERENCE ONLY]\nx\n\nsummary here", 1, 200, "manual"
        )


@dataclass
class FakeMemoryRecords:
    """An empty memory: every search and match finds nothing."""

    async def search(self, query: str) -> list[MemoryHit]:
        return []

    async def matching(self, query: str) -> list[MemoryHit]:
        return []


@dataclass
class FakeForgetting:
    """Incognito is a flag on the shared FakeState; forgetting finds nothing to forget;
    deleting a conversation removes it (closing it if open), LookupError if none matches."""

    state: FakeState

    async def set_incognito(self, on: bool) -> ForgetReport | None:
        self.state.incognito = on
        return None

    async def forget(self, keys: list[str]) -> ForgetReport:
        return ForgetReport()

    async def forget_matching(self, query: str, *, sentences: bool = False) -> ForgetReport:
        return ForgetReport()

    async def forget_everything(self) -> ForgetReport:
        return ForgetReport()

    async def delete_conversation(self, id_or_prefix: str) -> tuple[Conversation, ForgetReport]:
        state = self.state
        conv_id = state.find(id_or_prefix)
        conv = state.listed(conv_id)
        del state.saved[conv_id]
        if state.conversation is not None and state.conversation.id == conv_id:
            state.conversation = None
        return conv, ForgetReport(conversations=1)


if TYPE_CHECKING:

    def _fits_commands(commands: FakeMemoryCommands) -> MemoryCommandsApi:
        return commands  # mypy: the fake is all the UI asks of /note and /compact

    def _fits_records(records: FakeMemoryRecords) -> MemoryRecordsApi:
        return records  # mypy: the fake is all the UI looks up in memory

    def _fits_forgetting(forgetting: FakeForgetting) -> ForgettingApi:
        return forgetting  # mypy: the fake is all the UI asks to forget
