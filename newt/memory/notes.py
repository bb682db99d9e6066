"""NoteBook: the one implementation behind `/note` and the `save_note` tool.

Validation is pure and happens before anything is written, so the in-memory
list and the database never diverge: the async methods plan the change,
write it through the repository, and only then apply it locally. A failed
write leaves the notebook untouched.

Rules: entries are stripped; the total of the entries'
lengths may not pass `limit` (2,200 characters); an exact duplicate add is a
no-op; replace/remove pick one entry by substring (an entry equal to the
substring wins; otherwise case-sensitive containment, then case-insensitive),
and zero or several matches are errors naming them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from newt.memory.errors import (
    DuplicateNote,
    EmptyNote,
    NoteAmbiguous,
    NoteNotFound,
    NotesFull,
)

NOTES_CHAR_LIMIT = 2200
# The notes were written before what the user says now: a note the user has since
# corrected in the conversation must not outrank the correction (with the
# bare heading Qwen2.5-Coder-1.5B answered from a stale note over a correction
# three turns back; with this one it took the correction, and still the note
# when nothing had corrected it).
NOTES_HEADING = (
    "## Notes saved across conversations "
    "(written earlier: what the user says later in this conversation wins)"
)


class NoteStore(Protocol):
    """What NoteBook needs from storage (newt.store.NoteRepo satisfies it)."""

    async def list(self) -> list[str]: ...
    async def add(self, content: str) -> None: ...
    async def replace(self, old: str, new: str) -> None: ...
    async def remove(self, content: str) -> None: ...


def _clean(text: str, what: str = "note") -> str:
    cleaned = text.strip()
    if not cleaned:
        raise EmptyNote(f"The {what} is empty; nothing to do.")
    return cleaned


class NoteBook:
    def __init__(self, notes: Iterable[str] = (), *, limit: int = NOTES_CHAR_LIMIT) -> None:
        self._notes: list[str] = [n for n in (s.strip() for s in notes) if n]
        self._limit = limit
        self._block: str | None = None
        self._block_valid = False

    @classmethod
    async def load(cls, repo: NoteStore, *, limit: int = NOTES_CHAR_LIMIT) -> NoteBook:
        return cls(await repo.list(), limit=limit)

    async def reload(self, repo: NoteStore) -> None:
        """Read the notes again in place (the provider holds this very book)."""
        self._notes = [n for n in (s.strip() for s in await repo.list()) if n]
        self._block_valid = False  # the system prompt shows what was read

    # -- read side ---------------------------------------------------------

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(self._notes)

    @property
    def used_chars(self) -> int:
        return sum(len(n) for n in self._notes)

    @property
    def limit(self) -> int:
        return self._limit

    def render_list(self) -> str:
        """Numbered entries and usage, for `/note list`."""
        if not self._notes:
            return f"No notes yet (0/{self._limit} chars)."
        lines = [f"{i}. {n}" for i, n in enumerate(self._notes, 1)]
        lines.append(f"({self.used_chars}/{self._limit} chars)")
        return "\n".join(lines)

    def system_prompt_block(self) -> str | None:
        """The notes as a system-prompt section; rebuilt only after a change."""
        if not self._block_valid:
            self._block = self._render_block()
            self._block_valid = True
        return self._block

    def _render_block(self) -> str | None:
        if not self._notes:
            return None
        items = "\n".join("- " + n.replace("\n", "\n  ") for n in self._notes)
        return f"{NOTES_HEADING}\n{items}"

    # -- planning (pure) ---------------------------------------------------

    def match(self, substring: str) -> str:
        """The one entry `substring` designates, or NoteNotFound / NoteAmbiguous."""
        sub = _clean(substring, "text to look for")
        if sub in self._notes:
            return sub
        hits = [n for n in self._notes if sub in n]
        if not hits:
            folded = sub.casefold()
            hits = [n for n in self._notes if folded in n.casefold()]
        if not hits:
            raise NoteNotFound(sub)
        if len(hits) > 1:
            raise NoteAmbiguous(sub, hits)
        return hits[0]

    def _check_room(self, would_be: int) -> None:
        if would_be > self._limit:
            raise NotesFull(self._notes, self.used_chars, self._limit, would_be)

    def _plan_add(self, text: str) -> str | None:
        note = _clean(text)
        if note in self._notes:
            return None
        self._check_room(self.used_chars + len(note))
        return note

    def _plan_replace(self, old_substring: str, new_text: str) -> tuple[str, str]:
        new = _clean(new_text, "replacement text")
        old = self.match(old_substring)
        if new != old and new in self._notes:
            raise DuplicateNote(new)
        self._check_room(self.used_chars - len(old) + len(new))
        return old, new

    # -- applying ----------------------------------------------------------

    def _changed(self) -> None:
        self._block_valid = False

    def _apply_add(self, note: str) -> None:
        self._notes.append(note)
        self._changed()

    def _apply_replace(self, old: str, new: str) -> None:
        if old != new:
            self._notes[self._notes.index(old)] = new
            self._changed()

    def _apply_remove(self, old: str) -> None:
        self._notes.remove(old)
        self._changed()

    # -- in memory only (the provider's synchronous add_note & co) -----------

    def add_local(self, text: str) -> bool:
        """Add in memory; False when the exact note already exists (a no-op)."""
        note = self._plan_add(text)
        if note is None:
            return False
        self._apply_add(note)
        return True

    def replace_local(self, old_substring: str, new_text: str) -> str:
        """Replace in memory; returns the entry that was replaced."""
        old, new = self._plan_replace(old_substring, new_text)
        self._apply_replace(old, new)
        return old

    def remove_local(self, substring: str) -> str:
        """Remove in memory; returns the removed entry."""
        old = self.match(substring)
        self._apply_remove(old)
        return old

    # -- persisted (what /note and save_note call) ---------------------------

    async def add(self, repo: NoteStore, text: str) -> bool:
        note = self._plan_add(text)
        if note is None:
            return False
        await repo.add(note)
        self._apply_add(note)
        return True

    async def replace(self, repo: NoteStore, old_substring: str, new_text: str) -> str:
        old, new = self._plan_replace(old_substring, new_text)
        if old != new:
            await repo.replace(old, new)
        self._apply_replace(old, new)
        return old

    async def remove(self, repo: NoteStore, substring: str) -> str:
        old = self.match(substring)
        await repo.remove(old)
        self._apply_remove(old)
        return old
