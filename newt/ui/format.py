"""Small text helpers shared by widgets and screens (pure, no textual)."""

from __future__ import annotations

import time

# Meter thresholds, as a share of the budget. The budget itself is already the
# compaction threshold (e.g. 80% of the window), so "high" means compaction is
# close rather than that the model is about to overflow.
WARN_AT = 0.70
HIGH_AT = 0.90


def clean(text: str) -> str:
    """Model or record text made safe to show (no terminal escapes)."""
    # Imported here: newt.agent.display brings the recall, memory and HTTP
    # layers, which the first frame must not wait for (see NewtApp).
    from newt.agent.display import strip_terminal_escapes

    return strip_terminal_escapes(text)


def tokens(n: int | None) -> str:
    """Compact token count: 812, 9,812, 12.3k, 1.2M."""
    if n is None:
        return "–"
    if abs(n) < 10_000:
        return f"{n:,}"
    if abs(n) < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def percent(used: int, budget: int) -> float:
    return 0.0 if budget <= 0 else used / budget * 100


def meter_level(used: int, budget: int) -> str:
    """'ok' | 'warn' | 'high' | 'over': drives the meter's CSS class."""
    share = 0.0 if budget <= 0 else used / budget
    if share > 1:
        return "over"
    if share >= HIGH_AT:
        return "high"
    if share >= WARN_AT:
        return "warn"
    return "ok"


FULLNESS = (
    "what the next request carries before your message (system prompt, notes,"
    " summary, the turns still in the window) of what newt fills before it"
    " folds; the footer shows the same figure"
)
"""The one explanation of the one fullness figure (the meter's tooltip, /memory)."""


def meter_text(used: int, budget: int) -> str:
    return f"{tokens(used)}/{tokens(budget)} · {percent(used, budget):.0f}%"


def ago(when: float, now: float | None = None) -> str:
    """Relative time for the picker ('just now', '5 min ago', '2 d ago', a date)."""
    now = time.time() if now is None else now
    seconds = max(0.0, now - when)
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    if seconds < 14 * 86400:
        return f"{int(seconds // 86400)} d ago"
    return time.strftime("%Y-%m-%d", time.localtime(when))


def said_on(when: float) -> str:
    """The day a message was said, "8 May 2023" (local time): an imported or old capsule
    shows its own day, not today's."""
    day = time.localtime(when)
    return f"{day.tm_mday} {time.strftime('%b %Y', day)}"


def one_line(text: str, width: int) -> str:
    """Collapse whitespace and cut to `width` characters with an ellipsis."""
    line = " ".join(clean(text).split())
    return line if len(line) <= width else line[: max(0, width - 1)].rstrip() + "…"


def retention_header(retained: int, budget: int, capsules: int, dropped: int) -> str:
    return (
        f"retained {tokens(retained)}/{tokens(budget)} tokens · "
        f"{capsules} capsule{'s' if capsules != 1 else ''} · {dropped} dropped"
    )
