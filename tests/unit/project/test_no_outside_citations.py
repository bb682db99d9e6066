"""The code cites only what is in the repository: docs/design.md, not the
original plan's DESIGN.md (which lives outside it, in ../shared/spec)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.paths import REPO

ROOT = REPO
SCANNED = ("newt", "tests", "benchmarks", "scripts")


def test_no_module_cites_the_plan_outside_the_repository() -> None:
    this = Path(__file__).resolve()
    citing = [
        str(path.relative_to(ROOT))
        for folder in SCANNED
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.resolve() != this and "DESIGN.md" in path.read_text(encoding="utf-8")
    ]
    assert citing == []


# "Issue 45:", "issue 10, item 4", "the seed's": references a reader of the
# repository cannot follow (the tracker and the seed documents live outside it)
TRACKER = re.compile(r"\bissues? #?\d+|\bthe seed\b|\bEMBER\b", re.IGNORECASE)


def test_no_module_cites_tracker_issues_or_the_seed() -> None:
    this = Path(__file__).resolve()
    citing = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for folder in SCANNED
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.resolve() != this
        for match in TRACKER.finditer(path.read_text(encoding="utf-8"))
    ]
    assert citing == []
