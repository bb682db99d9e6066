"""The exports `newt import` reads (tests/fixtures/import/) and the rows an
import adds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.support.paths import TESTS

FIXTURES = TESTS / "fixtures" / "import"
TABLES = ("conversations", "turns", "memory_records", "imports")


def counts(db: Path) -> tuple[int, ...]:
    with sqlite3.connect(db) as conn:
        return tuple(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES)
