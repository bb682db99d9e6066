"""SQL on newt's database lives in newt/store/: the front ends and the agent ask a
repository (`store.records.count()`), never run a statement through
`store.db.conn`. Why: the schema changes in one package, and a query written
elsewhere is one the store's migrations and tests do not see.

The modules named in `ALLOWED` run SQL outside the store, each for the reason
given beside it; a module that no longer does must leave the list.
"""

from __future__ import annotations

import re

from tests.support.paths import REPO

SQL_CALL = re.compile(r"\.execute\(|\bexecute_fetchall\b|\bexecutescript\b|\bexecutemany\b")

ALLOWED = {
    # recall: the ranking is the query (bm25 plans over memory_fts, the vector
    # index, the neighbours and newer statements read in one statement each)
    "newt/recall/context.py": "recall's context stage reads its candidates' rows",
    "newt/recall/engine.py": "recall's pipeline reads records in ranked batches",
    "newt/recall/newer.py": "newer statements: FTS counts over a sample of records",
    "newt/recall/vectors.py": "the vector index's own table (memory_vectors)",
    "newt/recall/word_ranking.py": "bm25 over memory_fts, planned per query",
    "newt/recall/tokens.py": "an in-memory FTS5 table as the index's tokenizer, not the store",
    # importing: other apps' SQLite files, and one transaction per imported conversation
    "newt/importing/sqlite_apps.py": "reads Elia's, oterm's and llm's databases",
    "newt/importing/sources.py": "tells those databases apart by their tables",
    "newt/importing/writer.py": "writes an imported conversation's rows in one transaction",
}


def _runs_sql(text: str) -> list[str]:
    return [
        f"{n}: {line.strip()}"
        for n, line in enumerate(text.splitlines(), 1)
        if SQL_CALL.search(line)
    ]


def test_sql_runs_only_in_the_store() -> None:
    found = []
    for path in sorted((REPO / "newt").rglob("*.py")):
        name = path.relative_to(REPO).as_posix()
        if name.startswith("newt/store/") or name in ALLOWED:
            continue
        found += [f"{name}:{hit}" for hit in _runs_sql(path.read_text(encoding="utf-8"))]
    assert not found, "SQL outside newt/store/ (add a repository method):\n" + "\n".join(found)


def test_every_allowed_module_still_runs_sql() -> None:
    stale = [
        name
        for name in ALLOWED
        if not (REPO / name).exists() or not _runs_sql((REPO / name).read_text(encoding="utf-8"))
    ]
    assert not stale, f"no SQL here any more: take them off ALLOWED: {stale}"


def test_the_check_sees_each_way_of_running_sql() -> None:
    for line in (
        'await conn.execute("SELECT 1")',
        "rows = await db.conn.execute_fetchall(QUERY)",
        "conn.executescript(SCHEMA)",
        "conn.executemany(INSERT, rows)",
    ):
        assert _runs_sql(line), line
    assert not _runs_sql("self.execute_turn(text)  # a name that only starts alike")
