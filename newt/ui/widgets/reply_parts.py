"""The parts of a reply around its text: the thinking block and the footer.

The thinking block sits above the answer, dimmed and folded to one line
(`▸ thinking · N lines`, with the newest line while it streams); ctrl+t
unfolds every block in the log, a click unfolds one. The footer under a
finished reply shows the backend's token counts and the speed; counts newt
had to estimate carry `~`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import events
from textual.content import Content
from textual.widgets import Static

from newt.ui.format import one_line, tokens
from newt.ui.widgets.log_host import LogHost

if TYPE_CHECKING:
    from newt.agent.display import ReplyStats
    from newt.agent.events import ReplyPace

PREVIEW_WIDTH = 72
SLOW_FIRST_TOKEN_S = 1.0  # a shorter wait for the first token is not worth a word


class ThinkingBlock(Static):
    """The model's reasoning, folded or unfolded."""

    def __init__(self, text: str = "", *, expanded: bool = False, live: bool = False) -> None:
        super().__init__("", classes="thinking", markup=False)
        self.text = text
        self.expanded = expanded
        self.live = live

    def on_mount(self) -> None:
        # the log says whether blocks show unfolded (ctrl+t); rebuilt ones follow it
        for node in self.ancestors:
            if isinstance(node, LogHost):
                self.expanded = node.thinking_expanded
                break
        self._show()

    def append(self, text: str) -> None:
        self.text += text
        self._show()

    def finish(self, text: str | None = None) -> None:
        if text is not None:
            self.text = text
        self.live = False
        self._show()

    def set_expanded(self, expanded: bool) -> None:
        if expanded != self.expanded:
            self.expanded = expanded
            self._show()

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.set_expanded(not self.expanded)

    def _show(self) -> None:
        body = self.text.strip()
        self.display = bool(body)
        if not body:
            return
        count = body.count("\n") + 1
        label = "thinking…" if self.live else "thinking"
        head = f"{label} · {count} line{'s' if count != 1 else ''}"
        if self.expanded:
            self.update(Content.assemble((f"▾ {head}", "bold"), " · ctrl+t folds\n", body))
            return
        parts: list[Any] = [(f"▸ {head}", "bold"), " · ctrl+t unfolds"]
        if self.live:  # what it is thinking about right now
            last = body.rsplit("\n", 1)[-1]
            parts.append(f" · {one_line(last, PREVIEW_WIDTH)}")
        self.update(Content.assemble(*parts))


def footer_text(stats: ReplyStats) -> str:
    """`1,234 prompt · 56 completion tokens · 23.4 tok/s`; `~` marks newt's estimates;
    a reply the backend cut at its length cap ends with "stopped at the length limit"."""
    mark = "~" if stats.estimated else ""
    parts = []
    if stats.prompt_tokens is not None:
        cached = stats.cached_tokens
        from_cache = f" ({tokens(cached)} from the cache)" if cached else ""
        parts.append(f"{mark}{tokens(stats.prompt_tokens)} prompt{from_cache}")
    if stats.completion_tokens is not None:
        parts.append(f"{mark}{tokens(stats.completion_tokens)} completion tokens")
    speed = stats.tokens_per_second
    if speed is not None:
        parts.append(f"{speed:.1f} tok/s")
    if stats.estimated:
        parts.append("estimated: the backend reported no usage")
    if stats.first_token_s is not None and stats.first_token_s >= SLOW_FIRST_TOKEN_S:
        parts.append(f"first token after {stats.first_token_s:.1f} s")
    if stats.stopped_for_length:
        parts.append("stopped at the length limit")
    return " · ".join(parts)


def pace_text(pace: ReplyPace, waited_s: float) -> str:
    """The streaming reply's status while the request is slow, `waited_s` after it
    went out: the prompt being read (with the server's progress, or newt's estimate),
    then the time the first token took and the reply's pace; "" while it is quick."""
    if pace.first_token_s is None:
        if waited_s < SLOW_FIRST_TOKEN_S and pace.read_tokens is None:
            return ""
        total = pace.prompt_tokens
        if pace.read_tokens is not None and total:
            what = f"Reading the prompt: {tokens(pace.read_tokens)} of {tokens(total)} tokens"
        elif total:
            what = f"Reading the prompt (~{tokens(total)} tokens)"
        else:
            what = "Waiting for the first token"
        left = ""
        if pace.left_s is not None:
            now_left = pace.left_s - max(0.0, waited_s - pace.waited_s)
            left = f", about {now_left:.0f} s left" if now_left >= 1 else ", almost done"
        return f"{what}: {waited_s:.0f} s{left}"
    if pace.first_token_s < SLOW_FIRST_TOKEN_S:
        return ""
    speed = f" · {pace.per_s:.1f} tokens/s" if pace.per_s else ""
    return f"First token after {pace.first_token_s:.1f} s{speed}"
