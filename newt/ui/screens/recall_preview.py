"""`/recall QUERY`: the capsules a message with that text would carry now.

A look, not a turn: nothing is sent, stored or counted (the session's
`recall_preview`). Each capsule shows its key, who said it when and its
excerpt; Enter opens the record whole. Why: so the user can see what an old
message would bring back before sending it, and forget it first if need be.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from newt.ui.format import clean, one_line, retention_header
from newt.ui.screens.record import Fetch, RecordScreen

if TYPE_CHECKING:
    from newt.agent.display import EvidenceCapsule, RetentionReport

EXCERPT_CHARS = 400
WHO = {"user": "you", "assistant": "the model", "tool": "a tool"}
KIND = {"note": "note", "compaction": "summary"}


def who_when(capsule: EvidenceCapsule) -> str:
    """ "you, 3 Mar 2025 14:02", "note, …", "summary, …": whose words and when."""
    who = KIND.get(capsule.kind) or WHO.get(capsule.role, capsule.role or capsule.kind)
    if not capsule.said_at:
        return who
    return f"{who}, {time.strftime('%-d %b %Y %H:%M', time.localtime(capsule.said_at))}"


def recall_prompt(capsule: EvidenceCapsule) -> Content:
    text = " ".join(clean(capsule.excerpt).split())
    if len(text) > EXCERPT_CHARS:
        text = text[: EXCERPT_CHARS - 1] + "…"
    return Content.assemble(
        (capsule.retrieval_key, "bold $accent"),
        (f"  {who_when(capsule)} · {capsule.tokens} tok", "dim"),
        "\n",
        text,
    )


def capsules_of(report: RetentionReport | None) -> Sequence[EvidenceCapsule]:
    return report.capsules if report is not None else ()


class RecallPreviewScreen(ModalScreen[None]):
    """What `/recall TEXT` found: "no capsules" when none; Enter opens one."""

    CSS_PATH = "recall_preview.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss", "Close")]

    def __init__(self, text: str, report: RetentionReport | None, fetch: Fetch) -> None:
        super().__init__()
        self.text = text
        self.report = report
        self._fetch = fetch

    def compose(self) -> ComposeResult:
        capsules = capsules_of(self.report)
        with Vertical(id="recall-panel") as panel:
            panel.border_title = f"Recall for “{one_line(self.text, 50)}”"
            panel.border_subtitle = "enter opens · esc closes"
            if not capsules:
                yield Static(
                    Content("no capsules: a message with this text would carry no memory now"),
                    id="recall-header",
                )
                return
            report = self.report
            assert report is not None
            yield Static(
                Content(
                    "A message with this text would carry now: "
                    + retention_header(
                        report.retained_tokens,
                        report.budget_tokens,
                        len(capsules),
                        report.dropped,
                    )
                ),
                id="recall-header",
            )
            options: list[Option | None] = []
            for i, capsule in enumerate(capsules):
                if i:
                    options.append(None)
                options.append(Option(recall_prompt(capsule), id=f"recall-{i}"))
            yield OptionList(*options, id="recall-list")

    @on(OptionList.OptionSelected, "#recall-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        index = int((event.option.id or "recall-0").rsplit("-", 1)[1])
        capsules = capsules_of(self.report)
        if index < len(capsules):
            self.app.push_screen(RecordScreen(capsules[index].retrieval_key, self._fetch))
