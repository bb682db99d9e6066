"""The memory view (`/memory search [QUERY]`): look through what newt
remembers, open a record whole, forget one, all that match, or everything.

Searching uses the recall a turn uses (newt.agent.own_memory.records), without
counting hits; an empty query lists the newest records. Every forget asks
once (everything: the word typed), then says what went (ForgetReport) and
searches again; `after_forget` lets the chat screen re-show its log, since
the session has already reloaded what it holds. Record text is cleaned and
shown as Content, never parsed as markup.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.events import Key
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from newt.agent.own_memory.forget_parts import holds_more
from newt.agent.own_memory.records import day, sentence_cut
from newt.ui.errors import describe
from newt.ui.format import one_line
from newt.ui.screens.confirm import ConfirmScreen
from newt.ui.screens.picker import list_keys
from newt.ui.screens.record import RecordScreen
from newt.ui.session_api import SessionLike

if TYPE_CHECKING:
    from newt.agent.own_memory.records import ForgetReport, MemoryHit

AfterForget = Callable[["ForgetReport"], Awaitable[None]]
SEARCH_DELAY = 0.15  # debounce, as the resume picker
EXCERPT = 110  # characters of a hit's one-line excerpt
PREVIEW_LINES = 12  # records listed before "forget everything matching" asks
KEYS = (
    "↓ to the list, then: enter opens · f forgets it · F forgets all matching"
    " · ctrl+x forgets everything"
)


def excerpt(text: str, query: str = "", width: int = EXCERPT) -> str:
    """One line of `text` (cleaned), starting a little before the first word
    of `query` it holds, so the line shows why the record matched."""
    line = one_line(text, 1_000_000)
    words = [w for w in re.findall(r"\w+", query.lower()) if len(w) > 1]
    at = min((i for w in words if (i := line.lower().find(w)) >= 0), default=0)
    start = max(0, at - width // 4)
    if start and len(line) - start < width:
        start = max(0, len(line) - width)
    cut = ("…" if start else "") + line[start:].lstrip()
    return cut if len(cut) <= width else cut[: width - 1].rstrip() + "…"


def _title(hit: MemoryHit) -> str:
    return one_line(hit.conversation_title, 50) if hit.conversation_id else "no conversation"


def hit_label(hit: MemoryHit) -> str:
    """Kind, conversation and date: "message · Trip plans · 3 Mar 2025"."""
    return f"{hit.kind} · {_title(hit)} · {day(hit.said_at)}"


def hit_prompt(hit: MemoryHit, query: str = "") -> Content:
    """A result's two lines: kind, conversation, date and key; the excerpt."""
    return Content.assemble(
        (hit.kind, "bold $accent"),
        " · ",
        (_title(hit), "bold"),
        (f" · {day(hit.said_at)} · {hit.key}", "dim"),
        "\n  ",
        excerpt(hit.content, query) or "(empty)",
    )


class MemoryBrowserScreen(ModalScreen[None]):
    """Search, open and forget what newt remembers. f, F and ctrl+x act from
    the list (the arrow keys take the focus there; letters go back to the
    search box)."""

    CSS_PATH = "memory_browser.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Close"),
        Binding("f", "forget_one", "Forget"),
        Binding("F", "forget_matching", "Forget matching"),
        Binding("ctrl+x", "forget_everything", "Forget everything"),
    ]

    def __init__(
        self, session: SessionLike, query: str = "", *, after_forget: AfterForget | None = None
    ) -> None:
        super().__init__()
        self.session = session
        self.query_text = query
        self.after_forget = after_forget
        self.hits: list[MemoryHit] = []
        self.notice = ""
        """What the last forget said (ForgetReport.describe())."""

    def compose(self) -> ComposeResult:
        with Vertical(id="memory-panel") as panel:
            panel.border_title = "Memory"
            panel.border_subtitle = "esc closes"
            yield Input(
                self.query_text, placeholder="Search what newt remembers…", id="memory-search"
            )
            yield OptionList(id="memory-list")
            yield Static("", id="memory-status")
            yield Static("", id="memory-notice")
            yield Static(Content(KEYS), id="memory-keys")

    def on_mount(self) -> None:
        self.search_box.focus()
        self.run_search(self.query_text, delay=0)

    @property
    def search_box(self) -> Input:
        return self.query_one("#memory-search", Input)

    @property
    def options(self) -> OptionList:
        return self.query_one("#memory-list", OptionList)

    def highlighted(self) -> MemoryHit | None:
        index = self.options.highlighted
        return self.hits[index] if index is not None and 0 <= index < len(self.hits) else None

    # -- searching -------------------------------------------------------------------

    @on(Input.Changed, "#memory-search")
    def _changed(self, event: Input.Changed) -> None:
        self.run_search(event.value)

    @work(exclusive=True, group="memory-search", exit_on_error=False)
    async def run_search(self, text: str, delay: float = SEARCH_DELAY) -> None:
        if delay:
            await asyncio.sleep(delay)
        status = self.query_one("#memory-status", Static)
        try:
            found = list(await self.session.memory_records.search(text))
        except Exception as exc:  # a store error shows here; the app goes on
            status.update(Content(f"Search failed: {describe(exc)}"))
            return
        self.hits = found
        options = self.options
        options.clear_options()
        options.add_options(Option(hit_prompt(h, text), id=h.key) for h in found)
        if found:
            options.highlighted = 0
        n = len(found)
        noun = "record" if n == 1 else "records"
        if found:
            line = f"{n} {noun}" + (f" for “{text.strip()}”" if text.strip() else ", newest first")
        elif text.strip():
            line = f"Nothing in memory matches “{text.strip()}”."
        else:
            line = "Memory is empty."
        status.update(Content(one_line(line, 200)))

    def on_key(self, event: Key) -> None:
        list_keys(self, event, self.search_box, self.options, acting=("f", "F"))

    @on(Input.Submitted, "#memory-search")
    def _submitted(self, event: Input.Submitted) -> None:
        hit = self.highlighted()
        if hit is not None:
            self._open(hit)

    @on(OptionList.OptionSelected, "#memory-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        hit = self.highlighted()
        if hit is not None:
            self._open(hit)

    def _open(self, hit: MemoryHit) -> None:
        self.app.push_screen(RecordScreen(hit.key, self.session.fetch_record))

    # -- forgetting ------------------------------------------------------------------

    def action_forget_one(self) -> None:
        hit = self.highlighted()
        if hit is not None:
            self._forget_one(hit)

    @work(exclusive=True, group="memory-forget", exit_on_error=False)
    async def _forget_one(self, hit: MemoryHit) -> None:
        ask = ConfirmScreen(
            f"Forget this {hit.kind}? y/n",
            [hit_label(hit), excerpt(hit.content, self.search_box.value)],
        )
        if await self.app.push_screen_wait(ask):
            await self._forgetting(lambda: self.session.forgetting.forget([hit.key]))

    def action_forget_matching(self) -> None:
        self._forget_matching(self.search_box.value.strip())

    @work(exclusive=True, group="memory-forget", exit_on_error=False)
    async def _forget_matching(self, query: str) -> None:
        if not query:
            self._say("Type what to forget in the search box first, then F.")
            return
        try:
            going = list(await self.session.memory_records.matching(query))
        except Exception as exc:
            self._say(describe(exc))
            return
        if not going:
            self._say(f"No record holds “{one_line(query, 60)}”: nothing to forget.")
            return
        cuttable = any(sentence_cut(h, query) is not None for h in going)
        ask = ConfirmScreen(
            f"Forget {len(going)} record{'s' if len(going) != 1 else ''} holding"
            f" “{one_line(query, 60)}”? y/n",
            preview_lines(going, query)
            + (["s forgets only the sentences that hold it: the rest stays"] if cuttable else []),
            also=("s", "only the sentences") if cuttable else None,
        )
        if await self.app.push_screen_wait(ask):
            only = ask.chose_also
            await self._forgetting(
                lambda: self.session.forgetting.forget_matching(query, sentences=only)
            )

    def action_forget_everything(self) -> None:
        self._forget_everything()

    @work(exclusive=True, group="memory-forget", exit_on_error=False)
    async def _forget_everything(self) -> None:
        ask = ConfirmScreen(
            "Forget everything newt remembers?",
            [
                "Every conversation goes, with its turns, summaries and settings,",
                "and every memory record, note and vector.",
                "(What newt measured of the models stays: it holds none of your words.)",
            ],
            typed="forget",
        )
        if await self.app.push_screen_wait(ask):
            await self._forgetting(self.session.forgetting.forget_everything)

    async def _forgetting(self, work: Callable[[], Awaitable[ForgetReport]]) -> None:
        try:
            report = await work()
        except Exception as exc:  # said here; nothing is half-forgotten (one transaction)
            self._say(describe(exc))
            return
        text = report.describe()
        self._say(text)
        self.notify(text, title="Forgotten", timeout=6, markup=False)
        if self.after_forget is not None:
            await self.after_forget(report)
        self.search_box.focus()
        self.run_search(self.search_box.value, delay=0)

    def _say(self, text: str) -> None:
        self.notice = text
        self.query_one("#memory-notice", Static).update(Content(text))


def preview_lines(hits: Sequence[MemoryHit], query: str) -> list[str]:
    """What "forget all matching" lists before it asks: one line a record."""
    lines = [
        f"{hit_label(h)}: {excerpt(h.content, query, 70)}"
        + (" (holds more: all of it goes)" if holds_more(h.content, query) else "")
        for h in hits[:PREVIEW_LINES]
    ]
    if len(hits) > PREVIEW_LINES:
        lines.append(f"… and {len(hits) - PREVIEW_LINES} more")
    return lines
