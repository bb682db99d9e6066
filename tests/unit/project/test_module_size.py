"""A module over 400 lines is a warning sign: a newcomer reads one in a sitting.

The guard asks, it does not cut. A module that grows past the limit is split
by concern; one that is a single thing (a screen, say) may stay whole, named
below with the reason, so the choice is made once and seen in review.
"""

from __future__ import annotations

from tests.support.paths import REPO

ROOT = REPO
MAX_LINES = 400
# Modules over the limit that are one thing, each with why it stays whole.
ONE_THING: dict[str, str] = {}


def line_counts() -> dict[str, int]:
    return {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted((ROOT / "newt").rglob("*.py"))
    }


def test_a_module_over_the_limit_is_split_by_concern_or_says_why_it_is_one_thing() -> None:
    over = [
        f"{name}: {n} lines"
        for name, n in line_counts().items()
        if n > MAX_LINES and name not in ONE_THING
    ]
    assert not over, over


def test_every_whole_module_still_needs_the_exception_and_gives_a_reason() -> None:
    # a module that shrank (or went) leaves the list, so it cannot grow back unseen
    counts = line_counts()
    fits = sorted(name for name in ONE_THING if counts.get(name, 0) <= MAX_LINES)
    assert not fits, f"remove from ONE_THING: {fits}"
    assert all(reason.strip() for reason in ONE_THING.values())
