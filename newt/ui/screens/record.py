"""A memory record shown in full, verbatim (opened from an evidence capsule)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import LoadingIndicator, Static

from newt.agent.views import RecordView as MemoryRecord
from newt.ui.format import clean

Fetch = Callable[[str], Awaitable[MemoryRecord | None]]


class RecordScreen(ModalScreen[None]):
    CSS_PATH = "record.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss", "Close")]

    def __init__(self, key: str, fetch: Fetch) -> None:
        super().__init__()
        self.key = key
        self._fetch = fetch

    def compose(self) -> ComposeResult:
        with Vertical(id="panel") as panel:
            panel.border_title = f"Record {self.key}"
            panel.border_subtitle = "esc to close"
            yield Static("", id="record-meta")
            with VerticalScroll(id="record-scroll"):
                yield LoadingIndicator()

    def on_mount(self) -> None:
        self._load()

    @work(exclusive=True, group="record", exit_on_error=False)
    async def _load(self) -> None:
        scroll = self.query_one("#record-scroll", VerticalScroll)
        meta = self.query_one("#record-meta", Static)
        try:
            record = await self._fetch(self.key)
        except Exception as exc:  # a store error must not close the app
            record = None
            meta.update(Content(f"Could not load the record: {exc}"))
        await scroll.remove_children()
        if record is None:
            if not meta.content:
                meta.update(Content(f"No record with key {self.key} (it may have been removed)."))
            return
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.created_at))
        meta.update(Content(f"{record.source} · created {created} · {len(record.content):,} chars"))
        await scroll.mount(Static(Content(clean(record.content)), id="record-content"))
