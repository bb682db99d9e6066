"""A scripted stand-in for ChatSession, for UI tests that need exact figures.

Most UI tests drive the real app against the fake OpenAI server; this one is
for what the real stack cannot produce on demand or deterministically (a
particular retention report, a failing turn, a slow stream to cancel).
FakeSession is newt.ui.session_api.SessionLike composed of one small fake per
part (tests/support/fakes/: FakeTurns, FakeConversations, ...), all sharing one
FakeState; it owns only what no part does (the config, closing, the record
modal's records, token counts). A test scripts or checks a part where the part
owns it: `session.turns.script(...)`, `session.turns.sent`,
`session.memory_commands.notes`, `session.state.add_conversation(...)`.
mypy checks the fit here and each part's in its module (scripts/test runs mypy
on this module, which imports them all). Holds no tests itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from newt.agent.history_import import ImportFormatError, ImportProgress, ImportReport
from newt.chat_settings import Preset
from newt.config import Config
from newt.recall import RetentionReport
from newt.store import Conversation, MemoryRecord
from tests.support.fakes.conversations import FakeConversations
from tests.support.fakes.edits import FakeEdits
from tests.support.fakes.mcp_controls import FakeMcpControls
from tests.support.fakes.memory import FakeForgetting, FakeMemoryCommands, FakeMemoryRecords
from tests.support.fakes.settings_controls import FakeSettingsControls
from tests.support.fakes.state import FakeState, FakeStatus
from tests.support.fakes.turns import FakeTurns

if TYPE_CHECKING:
    from newt.ui.session_api import SessionLike

NOW = 1_700_000_000.0


@dataclass
class FakeSession:
    """The parts, each built on `state`, and what the session itself answers: its face
    (model, open conversation, figures) read from `state`, `set_model`, records by key
    ("missing" has none), a token estimate of len/4, and `closed` once closed."""

    state: FakeState = field(default_factory=FakeState)
    config: Config = field(default_factory=Config)
    closed: bool = False
    started_background_work: int = 0
    turns: FakeTurns = field(init=False)
    conversations: FakeConversations = field(init=False)
    edits: FakeEdits = field(init=False)
    settings_controls: FakeSettingsControls = field(init=False)
    memory_commands: FakeMemoryCommands = field(init=False)
    memory_records: FakeMemoryRecords = field(init=False)
    forgetting: FakeForgetting = field(init=False)
    mcp_controls: FakeMcpControls = field(init=False)

    def __post_init__(self) -> None:
        self.turns = FakeTurns(self.state)
        self.conversations = FakeConversations(self.state)
        self.edits = FakeEdits(self.state)
        self.settings_controls = FakeSettingsControls(self.state)
        self.memory_commands = FakeMemoryCommands()
        self.memory_records = FakeMemoryRecords()
        self.forgetting = FakeForgetting(self.state)
        self.mcp_controls = FakeMcpControls()

    # the face the chat screen draws (SessionFace), from the shared state
    @property
    def conversation(self) -> Conversation | None:
        return self.state.conversation

    @property
    def model(self) -> str:
        return self.state.model

    @property
    def base_url(self) -> str:
        return self.state.base_url

    @property
    def last_retention(self) -> RetentionReport | None:
        return self.state.last_retention

    @property
    def incognito(self) -> bool:
        return self.state.incognito

    @property
    def unsaved(self) -> bool:
        return self.state.unsaved

    def memory_status(self) -> FakeStatus:
        return self.state.status

    # what no one part owns
    def start_background_work(self) -> None:
        self.started_background_work += 1

    async def probed(self) -> None:
        return None

    async def close(self) -> None:
        self.closed = True

    async def set_model(self, model: str) -> None:
        self.state.model = model

    async def apply_preset(
        self, name: str, *, for_new: bool = False, switch_model: bool = True
    ) -> Preset:
        preset = self.settings_controls.use_preset(name)
        if preset.model and switch_model:
            self.state.model = preset.model
        return preset

    async def import_history(
        self, path: Path, *, source: str | None = None, progress: ImportProgress | None = None
    ) -> ImportReport:
        raise ImportFormatError(path, "a scripted session has no store to import into")

    async def fetch_record(self, key: str) -> MemoryRecord | None:
        if key == "missing":
            return None
        return MemoryRecord(1, key, "turn", None, f"Full verbatim record {key}.", 0, NOW)

    def estimate_tokens(self, text: str) -> int:
        return len(text) // 4

    async def count_tokens(self, text: str) -> int:
        return self.estimate_tokens(text)


if TYPE_CHECKING:

    def _fits(session: FakeSession) -> SessionLike:
        return session  # mypy: the fake is everything the UI may ask of a session
