"""Bringing other apps' history into newt's store: readers, one per format, and one writer."""

from newt.importing.model import (
    ImportedConversation,
    ImportedTurn,
    ImportFormatError,
    Refused,
)
from newt.importing.sources import SOURCES, default_path, read_source
from newt.importing.writer import ImportSummary, import_conversations

__all__ = [
    "SOURCES",
    "ImportFormatError",
    "ImportSummary",
    "ImportedConversation",
    "ImportedTurn",
    "Refused",
    "default_path",
    "import_conversations",
    "read_source",
]
