"""The retained-evidence sidebar: the capsules kept for the last turn.

Each capsule shows its short retrieval key, tokens, recoverability, the day it
was said (an imported turn's own day, not today's) and the verbatim excerpt;
selecting one asks the screen to fetch the full record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from newt.ui.format import clean, retention_header, said_on

if TYPE_CHECKING:
    from newt.agent.display import EvidenceCapsule, RetentionReport

EXCERPT_CHARS = 400  # the excerpt is already budget-bounded; this only guards layout
# Why the reply may ignore the last few messages: a lookup went out without them.


def capsule_prompt(capsule: EvidenceCapsule) -> Content:
    excerpt = " ".join(clean(capsule.excerpt).split())
    if len(excerpt) > EXCERPT_CHARS:
        excerpt = excerpt[: EXCERPT_CHARS - 1] + "…"
    # the day it was said (a note or a summary has no one moment: none)
    day = f" · {said_on(capsule.said_at)}" if capsule.said_at > 0 else ""
    return Content.assemble(
        (capsule.retrieval_key, "bold $accent"),
        (f"  {capsule.tokens} tok · rec {capsule.recoverability:.2f}{day}", "dim"),
        "\n",
        excerpt,
    )


class EvidenceSidebar(Vertical):
    class CapsuleSelected(Message):
        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.report: RetentionReport | None = None

    def compose(self) -> ComposeResult:
        yield Static("Retained evidence", classes="title")
        yield Static("no retrieval yet", id="evidence-header")
        yield OptionList(id="capsules")

    def show(self, report: RetentionReport | None) -> None:
        self.report = report
        header = self.query_one("#evidence-header", Static)
        capsules = self.query_one("#capsules", OptionList)
        capsules.clear_options()
        if report is None:
            header.update("no retrieval yet")
            self.set_class(True, "-empty")
            return
        header.update(
            retention_header(
                report.retained_tokens,
                report.budget_tokens,
                len(report.capsules),
                report.dropped,
            )
        )
        self.set_class(not report.capsules, "-empty")
        options: list[Option | None] = []
        for i, capsule in enumerate(report.capsules):
            if i:
                options.append(None)  # a separator line between capsules
            options.append(Option(capsule_prompt(capsule), id=f"capsule-{i}"))
        capsules.add_options(options)
        if report.capsules:
            capsules.highlighted = 0

    @on(OptionList.OptionSelected, "#capsules")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        index = int((event.option.id or "capsule-0").rsplit("-", 1)[1])
        if self.report is not None and index < len(self.report.capsules):
            capsule = self.report.capsules[index]
            self.post_message(self.CapsuleSelected(capsule.retrieval_key))
