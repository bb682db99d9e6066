"""The /note sub-language: `<text>`, `replace <old> => <new>`, `remove <text>`, `list`.

One implementation for /note; the model's save_note tool uses the same NoteBook.
"""

from __future__ import annotations

from newt.agent.errors import SessionError
from newt.memory.notes import NoteBook, NoteStore


def is_read_only_note_command(arg: str) -> bool:
    arg = arg.strip()
    return not arg or arg.partition(" ")[0] == "list"


async def run_note_command(notes: NoteBook, repo: NoteStore, arg: str) -> str:
    arg = arg.strip()
    head, _, rest = arg.partition(" ")
    if is_read_only_note_command(arg):
        return notes.render_list() if notes.notes else "no notes yet: /note <text> adds one"
    if head == "remove":
        removed = await notes.remove(repo, rest)
        return f"removed note: {removed}"
    if head == "replace":
        old, sep, new = rest.partition("=>")
        if not sep:
            raise SessionError("use /note replace <old text> => <new text>")
        await notes.replace(repo, old.strip(), new.strip())
        return f"replaced note with: {new.strip()}"
    added = await notes.add(repo, arg)
    return "saved note" if added else "that note is already saved"
