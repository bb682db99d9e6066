"""The code cites only what is in the repository: docs/design.md, not the
original plan's DESIGN.md (which lives outside it, in ../shared/spec)."""

from __future__ import annotations

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
