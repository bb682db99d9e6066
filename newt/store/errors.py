"""Errors raised by the store.

StoreError
 ├── NotADatabaseError     the file exists but is not an SQLite database
 ├── DatabaseTooNewError   written by a newer newt; we refuse to touch it
 └── DatabaseBusyError     another process held the write lock for too long
"""

from __future__ import annotations

from pathlib import Path

from newt.errors import InputError


class StoreError(InputError):
    """A problem with newt's database that the user has to act on."""


class NotADatabaseError(StoreError):
    def __init__(self, path: Path) -> None:
        super().__init__(
            f"{path} is not a newt database (it is not SQLite, or it is damaged). "
            "newt left it untouched; move it aside or point NEWT_HOME elsewhere."
        )
        self.path = path


class DatabaseTooNewError(StoreError):
    def __init__(self, path: Path, found: int, supported: int) -> None:
        super().__init__(
            f"{path} was written by a newer newt (schema version {found}; this newt "
            f"understands up to {supported}). Upgrade newt to open it; nothing was changed."
        )
        self.path = path
        self.found = found
        self.supported = supported


class DatabaseBusyError(StoreError):
    def __init__(self, path: Path, waited_s: float) -> None:
        super().__init__(
            f"{path} stayed locked by another process for {waited_s:.0f} s "
            "(another newt writing, or one that hangs); newt stopped waiting. Try again."
        )
        self.path = path
        self.waited_s = waited_s
