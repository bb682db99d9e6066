"""Errors raised by newt.memory.

    InputError (newt/errors.py: exit status 2)
    ├── NotesUnsupported      the provider has no notebook attached (the default)
    └── NoteError             a note operation was refused; str(err) is the
        │                     user-facing message (what happened, what to do)
        ├── EmptyNote         empty note text or empty search substring
        ├── DuplicateNote     a replace would create a second copy of an entry
        ├── NoteNotFound      no entry contains the substring
        ├── NoteAmbiguous     several entries contain the substring
        └── NotesFull         the change would pass the character limit

NoteError subclasses ValueError so generic callers can treat it as bad input.
"""

from __future__ import annotations

from collections.abc import Sequence

from newt.errors import InputError


class NotesUnsupported(InputError):
    """Raised by add_note/replace_note/remove_note of a provider without notes."""

    def __init__(self, provider: str = "this memory provider") -> None:
        super().__init__(f"{provider} does not support notes")


class NoteError(InputError, ValueError):
    """Base class of refused note operations."""


class EmptyNote(NoteError):
    pass


class DuplicateNote(NoteError):
    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(f"That note already exists: {text!r}. Remove one of them instead.")


class NoteNotFound(NoteError):
    def __init__(self, substring: str) -> None:
        self.substring = substring
        super().__init__(f"No note contains {substring!r}. Use /note list to see them.")


class NoteAmbiguous(NoteError):
    def __init__(self, substring: str, matches: Sequence[str]) -> None:
        self.substring = substring
        self.matches = list(matches)
        listed = "\n".join(f"- {m}" for m in self.matches)
        super().__init__(
            f"{len(self.matches)} notes contain {substring!r}; "
            f"use a longer piece of the one you mean:\n{listed}"
        )


class NotesFull(NoteError):
    def __init__(self, entries: Sequence[str], used: int, limit: int, would_be: int) -> None:
        self.entries = list(entries)
        self.used = used
        self.limit = limit
        self.would_be = would_be
        listed = "\n".join(f"{i}. {e}" for i, e in enumerate(self.entries, 1))
        super().__init__(
            f"Notes are full: {used}/{limit} chars used and this change would make it "
            f"{would_be}/{limit}. Replace or remove an entry first:\n{listed}"
        )
