"""The code cites only what is in the repository: docs/design.md, not the
original plan's DESIGN.md (which lives outside it, in ../shared/spec)."""

from __future__ import annotations

from tests.paths import REPO

ROOT = REPO


def test_no_module_cites_the_plan_outside_the_repository() -> None:
    citing = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "newt").rglob("*.py"))
        if "DESIGN.md" in path.read_text(encoding="utf-8")
    ]
    assert citing == []
