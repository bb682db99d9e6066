"""Print mode's extras for reasoning models: the thinking, shown only when asked, and the speed."""

from __future__ import annotations

from typing import TextIO

from newt.agent import events as ev
from newt.text import StreamSanitizer


def speed(done: ev.TurnDone | None) -> float | None:
    rate = done.stats.tokens_per_second if done and done.stats else None
    return None if rate is None else round(rate, 2)


class ThinkingPrinter:
    """The reasoning, streamed inside <think>…</think> before the reply (or nowhere)."""

    def __init__(self, out: TextIO | None) -> None:
        self.out = out
        self.sanitizer = StreamSanitizer()
        self.state = "before"  # before | open | closed

    def write(self, text: str) -> None:
        if self.out is None or self.state == "closed":
            return
        if self.state == "before":
            text = text.lstrip("\n")
            if not text:
                return
            self.out.write("<think>\n")
            self.state = "open"
        self.out.write(self.sanitizer.feed(text))
        self.out.flush()

    def close(self) -> None:
        if self.out is not None and self.state == "open":
            self.out.write(self.sanitizer.flush().rstrip("\n") + "\n</think>\n\n")
            self.out.flush()
        self.state = "closed"
