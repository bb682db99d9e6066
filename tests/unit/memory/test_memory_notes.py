"""NoteBook: the one implementation behind /note and save_note (docs/design.md section 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from newt.memory import (
    NOTES_CHAR_LIMIT,
    DuplicateNote,
    EmptyNote,
    NoteAmbiguous,
    NoteBook,
    NoteError,
    NoteNotFound,
    NotesFull,
    NotesUnsupported,
    RollingWindow,
    TokenBudget,
)
from newt.memory.notes import NOTES_HEADING
from newt.store import Store


async def open_store(tmp_path: Path) -> Store:
    return await Store.open(tmp_path / "newt.db")


def test_add_strips_and_ignores_exact_duplicates() -> None:
    book = NoteBook()
    assert book.add_local("  Ada is seven.  ") is True
    assert book.add_local("Ada is seven.") is False  # a no-op, not an error
    assert book.notes == ("Ada is seven.",)
    assert (book.used_chars, book.limit) == (13, NOTES_CHAR_LIMIT)
    assert NOTES_CHAR_LIMIT == 2200


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_notes_are_refused(text: str) -> None:
    book = NoteBook(["x"])
    with pytest.raises(EmptyNote):
        book.add_local(text)
    with pytest.raises(EmptyNote):
        book.remove_local(text)  # an empty substring would match everything
    with pytest.raises(EmptyNote):
        book.replace_local("x", text)
    assert book.notes == ("x",)


def test_the_limit_is_2200_characters_in_total() -> None:
    book = NoteBook(["a" * 1000, "b" * 1000])
    assert book.add_local("c" * 200) is True  # exactly 2,200 is allowed
    with pytest.raises(NotesFull) as err:
        book.add_local("d")
    message = str(err.value)
    assert "2200/2200 chars" in message and "2201/2200" in message
    assert "1. " + "a" * 1000 in message and "3. " + "c" * 200 in message
    assert err.value.entries == ["a" * 1000, "b" * 1000, "c" * 200]
    assert book.used_chars == 2200


def test_replace_picks_one_entry_by_substring() -> None:
    book = NoteBook(["Ada is seven.", "Bob likes tea."])
    assert book.replace_local("Ada", "Ada is eight.") == "Ada is seven."
    assert book.notes == ("Ada is eight.", "Bob likes tea.")
    assert book.replace_local("TEA", "Bob likes coffee.") == "Bob likes tea."  # any case
    assert book.notes == ("Ada is eight.", "Bob likes coffee.")


def test_zero_matches_name_the_substring() -> None:
    book = NoteBook(["Ada is seven."])
    with pytest.raises(NoteNotFound, match="'kites'") as err:
        book.remove_local("kites")
    assert err.value.substring == "kites"


def test_several_matches_list_them() -> None:
    book = NoteBook(["Ada likes kites.", "Bob likes kites too.", "Cy is three."])
    with pytest.raises(NoteAmbiguous) as err:
        book.replace_local("kites", "x")
    assert err.value.matches == ["Ada likes kites.", "Bob likes kites too."]
    assert "- Ada likes kites.\n- Bob likes kites too." in str(err.value)
    assert book.notes == ("Ada likes kites.", "Bob likes kites too.", "Cy is three.")


def test_an_entry_equal_to_the_substring_wins_over_longer_ones() -> None:
    book = NoteBook(["cat", "cats are great"])
    assert book.remove_local("cat") == "cat"
    assert book.notes == ("cats are great",)


def test_replace_checks_duplicates_and_the_limit() -> None:
    book = NoteBook(["Ada is seven.", "Bob likes tea.", "x" * 2100])
    with pytest.raises(DuplicateNote):
        book.replace_local("Ada", "Bob likes tea.")
    with pytest.raises(NotesFull):
        book.replace_local("Ada", "A" * 100)  # 2,127 - 13 + 100 = 2,214
    assert book.replace_local("Ada", "Ada is seven.") == "Ada is seven."  # same text: no-op
    assert book.used_chars == 2127


def test_note_errors_are_value_errors() -> None:
    assert issubclass(NoteError, ValueError)
    for cls in (EmptyNote, DuplicateNote, NoteNotFound, NoteAmbiguous, NotesFull):
        assert issubclass(cls, NoteError)


def test_system_prompt_block_is_rebuilt_only_when_notes_change() -> None:
    book = NoteBook()
    assert book.system_prompt_block() is None
    book.add_local("Ada is seven.")
    first = book.system_prompt_block()
    assert first == f"{NOTES_HEADING}\n- Ada is seven."
    assert book.system_prompt_block() is first  # cached: the same object
    book.add_local("Ada is seven.")  # duplicate: nothing changed
    assert book.system_prompt_block() is first
    with pytest.raises(NoteNotFound):
        book.remove_local("zebra")  # refused: nothing changed
    assert book.system_prompt_block() is first
    book.add_local("Line one\nline two")
    second = book.system_prompt_block()
    assert second is not first
    assert second == (f"{NOTES_HEADING}\n- Ada is seven.\n- Line one\n  line two")


def test_render_list_numbers_entries_with_usage() -> None:
    assert NoteBook().render_list() == "No notes yet (0/2200 chars)."
    assert NoteBook(["a", "bb"]).render_list() == "1. a\n2. bb\n(3/2200 chars)"


# -- persisted through the real store -------------------------------------------


async def test_persisted_changes_survive_a_reopen(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    book = await NoteBook.load(store.notes)
    assert await book.add(store.notes, "Ada is seven.") is True
    assert await book.add(store.notes, "Bob likes tea.") is True
    assert await book.add(store.notes, "Ada is seven.") is False
    assert await book.replace(store.notes, "seven", "Ada is eight.") == "Ada is seven."
    assert await book.remove(store.notes, "tea") == "Bob likes tea."
    await book.add(store.notes, "Cy is three.")
    await store.close()

    store = await open_store(tmp_path)
    try:
        reloaded = await NoteBook.load(store.notes)
        assert reloaded.notes == book.notes == ("Ada is eight.", "Cy is three.")
        assert await store.notes.list() == ["Ada is eight.", "Cy is three."]
    finally:
        await store.close()


async def test_refused_changes_write_nothing(tmp_path: Path) -> None:
    async with await open_store(tmp_path) as store:
        book = await NoteBook.load(store.notes)
        await book.add(store.notes, "a" * 2000)
        await book.add(store.notes, "b likes kites")
        await book.add(store.notes, "c likes kites")
        with pytest.raises(NotesFull):
            await book.add(store.notes, "d" * 300)
        with pytest.raises(NoteAmbiguous):
            await book.remove(store.notes, "kites")
        with pytest.raises(NoteNotFound):
            await book.replace(store.notes, "zebra", "z")
        assert await store.notes.list() == ["a" * 2000, "b likes kites", "c likes kites"]
        assert list(book.notes) == await store.notes.list()


async def test_a_failed_write_leaves_the_notebook_unchanged(tmp_path: Path) -> None:
    store = await open_store(tmp_path)
    book = await NoteBook.load(store.notes)
    await book.add(store.notes, "Ada is seven.")
    block = book.system_prompt_block()
    await store.close()  # the database goes away under us
    with pytest.raises(Exception):  # noqa: B017 - whatever the driver raises
        await book.add(store.notes, "Bob likes tea.")
    with pytest.raises(Exception):  # noqa: B017
        await book.remove(store.notes, "Ada")
    assert book.notes == ("Ada is seven.",)
    assert book.system_prompt_block() is block


# -- the providers' notes --------------------------------------------------------


def test_providers_without_a_notebook_raise_notes_unsupported() -> None:
    for provider in (TokenBudget(), RollingWindow()):
        with pytest.raises(NotesUnsupported, match=provider.name):
            provider.add_note("x")
        with pytest.raises(NotesUnsupported):
            provider.replace_note("x", "y")
        with pytest.raises(NotesUnsupported):
            provider.remove_note("x")
        assert provider.system_prompt_block() is None


def test_provider_notes_share_the_notebook_and_feed_the_system_prompt() -> None:
    book = NoteBook(["Ada is seven."])
    p = TokenBudget().with_notes(book)
    p.add_note("Bob likes tea.")
    p.replace_note("Ada", "Ada is eight.")
    p.remove_note("Bob")
    assert book.notes == ("Ada is eight.",)
    messages = p.build_messages("You are newt.", "hi")
    assert messages[0].content == (f"You are newt.\n\n{NOTES_HEADING}\n- Ada is eight.")
    assert p.build_messages("", "hi")[0].content == book.system_prompt_block()
    with pytest.raises(NotesFull):
        p.add_note("x" * 2200)


async def test_a_reload_in_place_renders_the_notes_read(tmp_path: Path) -> None:
    # the session holds one book and reloads it (at open, after a forget): the
    # system prompt must show what was read, never a block rendered before
    store = await open_store(tmp_path)
    try:
        book = NoteBook()
        assert book.system_prompt_block() is None
        other = await NoteBook.load(store.notes)  # another book writes, this one reads again
        await other.add(store.notes, "Ada is seven.")
        await book.reload(store.notes)
        assert "Ada is seven." in (book.system_prompt_block() or "")
        await other.remove(store.notes, "Ada")
        await book.reload(store.notes)
        assert book.system_prompt_block() is None
    finally:
        await store.close()
