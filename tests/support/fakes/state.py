"""The scripted world the fake session's parts share, and what tests fill it with.

FakeState holds what more than one part of a session reads or changes: the saved
conversations and which one is open, the model, the memory figures the meter
shows. Every part's fake takes the same FakeState, so a turn sent through
FakeTurns shows in FakeEdits' history and FakeConversations' picker, as it does
in ChatSession. What one part alone owns (notes, scripted replies) stays on it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from newt.agent.own_memory.status import MemoryStatus
from newt.recall import EvidenceCapsule, RetentionReport
from newt.store import Conversation, StoredTurn
from newt.store.forgotten import FORGOTTEN


@dataclass
class FakeStatus(MemoryStatus):
    """Fixed memory figures for the meter and /memory; a turn adds to `used`."""

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


@dataclass
class FakeState:
    """The saved conversations (by id: turns and title), the open one, the model and
    the memory figures: what the session's face shows and its parts change."""

    model: str = "fake-model"
    base_url: str = "http://127.0.0.1:1/v1"
    conversation: Conversation | None = None
    last_retention: RetentionReport | None = None
    saved: dict[str, list[StoredTurn]] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    next_id: int = 1
    status: FakeStatus = field(default_factory=FakeStatus)
    incognito: bool = False
    unsaved: bool = False

    def add_conversation(self, conv_id: str, title: str, turns: list[StoredTurn]) -> None:
        """Save a conversation, as if an earlier run had had it (or a fork made it)."""
        self.saved[conv_id] = turns
        self.titles[conv_id] = title

    def new_id(self) -> str:
        """A fresh conversation id: 32 hex digits, counting up, so a test can predict it."""
        conv_id = f"{self.next_id:032x}"
        self.next_id += 1
        return conv_id

    def listed(self, conv_id: str) -> Conversation:
        """The saved conversation as the picker and the header see it."""
        turns = self.saved[conv_id]
        return Conversation(
            conv_id,
            self.titles.get(conv_id, ""),
            self.model,
            self.base_url,
            time.time(),  # the picker shows "just now": stable in snapshots
            time.time(),
            turn_count=sum(1 for t in turns if t.kind == "turn"),
            message_count=sum(
                (t.user != FORGOTTEN) + bool(t.assistant and t.assistant != FORGOTTEN)
                for t in turns
                if t.kind == "turn"
            ),
        )

    def find(self, id_or_prefix: str) -> str:
        """The one saved id starting with `id_or_prefix`; LookupError for none or several."""
        found = [c for c in self.saved if c.startswith(id_or_prefix)]
        if len(found) != 1:
            raise LookupError(f"no conversation matches {id_or_prefix!r}")
        return found[0]

    def open_turns(self) -> list[StoredTurn]:
        """The open conversation's stored turns (the list itself); none before the first."""
        return self.saved[self.conversation.id] if self.conversation else []


def make_turn(
    turn_id: int, user: str, assistant: str, *, kind: str = "turn", status: str = "complete"
) -> StoredTurn:
    """A stored turn (or a compaction record, `kind="compaction"`) for a saved conversation."""
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


def sample_report() -> RetentionReport:
    """A retention report with two capsules (t12, n3) and fixed figures, for Step.report."""
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
