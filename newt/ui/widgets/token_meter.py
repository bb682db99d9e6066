"""Footer token meter: `used/budget · pct` with a small bar, coloured by level."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from newt.ui.format import FULLNESS, meter_level, meter_text

LEVELS = ("ok", "warn", "high", "over")


def bar(used: int, budget: int, width: int) -> str:
    share = 0.0 if budget <= 0 else min(1.0, max(0.0, used / budget))
    filled = round(share * width)
    return "█" * filled + "░" * (width - filled)


class TokenMeter(Static):
    BAR_WIDTH = 10

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.used = 0
        self.budget = 0

    def set_usage(self, used: int, budget: int) -> None:
        if (used, budget) == (self.used, self.budget) and self.tooltip:
            return  # unchanged: the footer is not repainted
        self.used, self.budget = used, budget
        level = meter_level(used, budget)
        for name in LEVELS:
            self.set_class(name == level, f"-{name}")
        self.update(Content(f"{bar(used, budget, self.BAR_WIDTH)} {meter_text(used, budget)}"))
        self.tooltip = "Fullness: " + FULLNESS
