"""The /resume picker's keys: after a rename the focus is on the
list, so the next d deletes (it used to type a "d" into the search); an arrow
pressed before the rows arrive still moves the selection; the confirmation
and the report count the same thing with the same word."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from textual.app import App
from textual.widgets import Input, OptionList

from newt.ui.screens.confirm import AskScreen, ConfirmScreen
from newt.ui.screens.picker import PickerScreen, delete_details


@dataclass
class Listed:
    id: str
    title: str
    message_count: int = 10
    model: str = "m"
    updated_at: float = 0.0
    parent_id: str | None = None
    parent_title: str | None = None


class Host(App[None]):
    def __init__(self, convs: list[Listed], gate: asyncio.Event | None = None) -> None:
        super().__init__()
        self.convs = convs
        self.gate = gate
        self.renamed: list[tuple[str, str]] = []
        self.deleted: list[str] = []

    async def search(self, text: str) -> Sequence[Listed]:
        if self.gate is not None:
            await self.gate.wait()
        return [c for c in self.convs if text.lower() in c.title.lower()]

    async def rename(self, conv_id: str, title: str) -> str:
        self.renamed.append((conv_id, title))
        next(c for c in self.convs if c.id == conv_id).title = title
        return f"Renamed to “{title}”."

    async def delete(self, conv_id: str) -> str:
        self.deleted.append(conv_id)
        self.convs = [c for c in self.convs if c.id != conv_id]
        return "Deleted: forgot 1 conversation, 10 messages, 10 memory records"

    def open_picker(self) -> PickerScreen:
        picker = PickerScreen(self.search, rename=self.rename, delete=self.delete)
        self.push_screen(picker)
        return picker


async def settle(pilot: object, check: object, what: str) -> None:
    for _ in range(200):
        if check():  # type: ignore[operator]
            return
        await pilot.pause(0.02)  # type: ignore[attr-defined]
    raise AssertionError(f"never: {what}")


async def test_after_a_rename_the_next_d_deletes() -> None:
    app = Host([Listed("a1", "Garden shed"), Listed("b2", "Trip to Oslo"), Listed("c3", "Tax")])
    async with app.run_test(size=(100, 30)) as pilot:
        picker = app.open_picker()
        await settle(pilot, lambda: len(picker.results) == 3, "the rows")
        await pilot.press("down")
        assert picker.highlighted() is not None and picker.highlighted().id == "b2"
        await pilot.press("r")
        await settle(pilot, lambda: isinstance(app.screen, AskScreen), "the rename box")
        app.screen.query_one("#ask-input", Input).value = "Trip to Bergen"
        await pilot.press("enter")
        await settle(pilot, lambda: picker.notice.startswith("Renamed"), "renamed")
        await settle(pilot, lambda: picker.results[1].title == "Trip to Bergen", "refreshed")
        assert picker.focused is picker.query_one("#picker-list", OptionList)
        await pilot.press("d")
        await settle(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        assert picker.search_box.value == ""  # no "d" typed into the search
        asked = app.screen
        assert isinstance(asked, ConfirmScreen)
        assert asked.question.startswith("Delete “Trip to Bergen”?")
        await pilot.press("y")
        await settle(pilot, lambda: app.deleted == ["b2"], "deleted")
        await settle(pilot, lambda: len(picker.results) == 2, "the list again")
        assert picker.focused is picker.query_one("#picker-list", OptionList)
        await pilot.press("down")  # one press moves the selection
        assert picker.highlighted() is not None


async def test_an_arrow_before_the_rows_arrive_still_moves_the_selection() -> None:
    gate = asyncio.Event()
    app = Host([Listed("a1", "Garden shed"), Listed("b2", "Trip to Oslo")], gate)
    async with app.run_test(size=(100, 30)) as pilot:
        picker = app.open_picker()
        await pilot.pause()
        await pilot.press("down")  # the search has not answered yet
        gate.set()
        await settle(pilot, lambda: len(picker.results) == 2, "the rows")
        await pilot.pause()
        assert picker.highlighted() is not None and picker.highlighted().id == "b2"
        assert picker.focused is picker.query_one("#picker-list", OptionList)


def test_the_confirmation_counts_messages_as_the_report_does() -> None:
    said = " ".join(delete_details(Listed("a1", "x", message_count=10)))
    assert "its 10 messages and the memory records" in said and "turn" not in said
    assert "its 1 message and the memory records" in " ".join(delete_details(Listed("a", "x", 1)))
