"""newt's SQLite store: one aiosqlite connection, numbered migrations, repositories."""

from newt.store.conversations import ConversationRepo, TurnRepo, make_title
from newt.store.db import Database
from newt.store.errors import (
    DatabaseBusyError,
    DatabaseTooNewError,
    NotADatabaseError,
    StoreError,
)
from newt.store.migrations import SCHEMA_VERSION
from newt.store.model_cache import CapabilityRepo
from newt.store.models import (
    Conversation,
    MemoryRecord,
    ModelCapabilities,
    ReplyDetails,
    StoredTurn,
)
from newt.store.notes import NoteRepo
from newt.store.records import RecordRepo
from newt.store.settings import SettingsRepo, StoredSettings


class Store:
    """The database plus one of each repository, for callers that want them all."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.conversations = ConversationRepo(db)
        self.turns = TurnRepo(db)
        self.notes = NoteRepo(db)
        self.records = RecordRepo(db)
        self.capabilities = CapabilityRepo(db)
        self.settings = SettingsRepo(db)

    @classmethod
    async def open(cls, path: object) -> "Store":
        from pathlib import Path

        return cls(await Database.open(Path(str(path))))

    async def close(self) -> None:
        await self.db.close()

    async def __aenter__(self) -> "Store":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


__all__ = [
    "SCHEMA_VERSION",
    "CapabilityRepo",
    "Conversation",
    "ConversationRepo",
    "Database",
    "DatabaseBusyError",
    "DatabaseTooNewError",
    "MemoryRecord",
    "ModelCapabilities",
    "NotADatabaseError",
    "NoteRepo",
    "RecordRepo",
    "ReplyDetails",
    "SettingsRepo",
    "Store",
    "StoreError",
    "StoredSettings",
    "StoredTurn",
    "TurnRepo",
    "make_title",
]
