"""Importing Elia, oterm and `llm` databases, from fixtures the real apps wrote.

How each fixture was made (the scripts are beside them in tests/fixtures/import/):
elia.sqlite by elia-chat 1.10.0's own create_database and ChatsManager (make_elia.py);
oterm.db by oterm 0.26.1's Store (make_oterm.py); llm_logs.db.gz by llm 0.36's
migrations and Response.log_to_db with an in-process echo model (make_llm.py), and
llm_logs_0.19.db.gz by the same script under llm 0.19, which wrote the older
`responses` table. Each was installed from PyPI into a throwaway venv."""

from __future__ import annotations

import gzip
import io
import shutil
import sqlite3
from pathlib import Path

import pytest

from newt.cli.import_command import import_main
from newt.importing import default_path, import_conversations, read_source
from newt.store import Store
from tests.support.paths import TESTS
from tests.support.session_helpers import make_config

FIXTURES = TESTS / "fixtures" / "import"
TABLES = ("conversations", "turns", "memory_records", "imports")


def fixture(tmp_path: Path, name: str) -> Path:
    src = FIXTURES / name
    if name.endswith(".gz"):
        out = tmp_path / name[:-3]
        out.write_bytes(gzip.decompress(src.read_bytes()))
        return out
    out = tmp_path / name
    shutil.copy(src, out)
    return out


def counts(db: Path) -> tuple[int, ...]:
    with sqlite3.connect(db) as conn:
        return tuple(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES)


async def imported(tmp_path: Path, name: str) -> tuple[Store, list[tuple[str, list]]]:  # type: ignore[type-arg]
    path = fixture(tmp_path, name)
    before = path.read_bytes()
    store = await Store.open(tmp_path / "n.db")
    _, items = read_source(path)
    summary = await import_conversations(store, list(items))
    assert not summary.refused
    assert path.read_bytes() == before  # read-only: the app's file is untouched
    convs = sorted(await store.conversations.list(), key=lambda c: c.created_at)
    return store, [(c.title, await store.turns.for_conversation(c.id)) for c in convs]


async def test_elia(tmp_path: Path) -> None:
    store, convs = await imported(tmp_path, "elia.sqlite")
    try:
        (title, turns), (title2, _) = convs
        assert title == "Family in Porto" and title2 == "Plan a 5k training week."
        assert [(t.user, t.assistant) for t in turns] == [
            ("My sister Ines lives in Porto.", "Porto is lovely. Noted."),
            ("What should I bring her?", "Pastel de nata from Lisbon."),
        ]
        # the system prompt is not a turn; 2024-03-06 11:00 UTC, elia's naive UTC
        assert turns[1].created_at == 1709722800.0
        record = await store.records.get(f"r{turns[1].id}")
        assert record is not None and record.said_at == 1709722800.0
    finally:
        await store.close()


async def test_oterm_notes_the_image(tmp_path: Path) -> None:
    store, convs = await imported(tmp_path, "oterm.db")
    try:
        titles = sorted(c[0] for c in convs)
        assert titles == ["Garden", "Translate 'hello' to Dutch."]
        turns = next(t for title, t in convs if title == "Garden")
        assert (
            turns[1].user
            == "Here is a photo of the leaves.\n\n[image not imported: image 1, 18 bytes]"
        )
        assert turns[1].assistant == "Those look like early blight."
    finally:
        await store.close()


@pytest.mark.parametrize("name", ["llm_logs.db.gz", "llm_logs_0.19.db.gz"])
async def test_llm_current_and_older_logs(tmp_path: Path, name: str) -> None:
    store, convs = await imported(tmp_path, name)
    try:
        (title, turns), (_, turns2) = convs
        assert title == "My bike lock code is 4471."
        assert [(t.user, t.assistant) for t in turns] == [
            ("My bike lock code is 4471.", "echo: My bike lock code is 4471."),
            ("And my locker is number 12.", "echo: And my locker is number 12."),
        ]
        assert turns[0].created_at < turns[1].created_at
        assert [t.user for t in turns2] == ["Name three Lisbon bakeries."]  # the system is left out
    finally:
        await store.close()


async def test_importing_a_database_twice_adds_nothing(tmp_path: Path) -> None:
    path = fixture(tmp_path, "elia.sqlite")
    async with await Store.open(tmp_path / "n.db") as store:
        await import_conversations(store, list(read_source(path)[1]))
        once = counts(tmp_path / "n.db")
        again = await import_conversations(store, list(read_source(path)[1]))
    assert counts(tmp_path / "n.db") == once and len(again.skipped) == 2 and not again.imported


def _other_db(path: Path) -> Path:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes(x)")
    return path


@pytest.mark.parametrize("source", ["elia", "oterm", "llm"])
@pytest.mark.parametrize("kind", ["other-sqlite", "not-sqlite"])
def test_a_malformed_database_is_refused_and_changes_nothing(
    tmp_path: Path, source: str, kind: str
) -> None:
    config = make_config("http://127.0.0.1:9/v1")
    assert config.db_path is not None
    assert import_main([str(fixture(tmp_path, "elia.sqlite"))], err=io.StringIO()) == 0
    before = counts(config.db_path)
    bad = tmp_path / f"bad-{source}.db"
    if kind == "other-sqlite":
        _other_db(bad)
    else:
        bad.write_bytes(b"this is not a database at all" * 10)
    err = io.StringIO()
    assert import_main([str(bad), "--from", source], err=err) == 2
    assert counts(config.db_path) == before
    assert str(bad) in err.getvalue() and "nothing was imported" in err.getvalue()


def test_default_paths_follow_each_app(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "LLM_USER_PATH", "OTERM_DATA_DIR"):
        monkeypatch.delenv(var, raising=False)
    assert default_path("elia") == tmp_path / ".local/share/elia/elia.sqlite"
    assert default_path("oterm") == tmp_path / ".local/share/oterm/store.db"
    assert default_path("llm") == tmp_path / ".config/io.datasette.llm/logs.db"
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "x"))
    assert default_path("llm") == tmp_path / "x/logs.db"


def test_from_an_app_without_a_path_reads_its_own_database(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    make_config("http://127.0.0.1:9/v1")
    monkeypatch.setenv("OTERM_DATA_DIR", str(tmp_path / "oterm"))
    (tmp_path / "oterm").mkdir()
    shutil.copy(FIXTURES / "oterm.db", tmp_path / "oterm" / "store.db")
    err = io.StringIO()
    assert import_main(["--from", "oterm"], err=err) == 0
    assert "imported 2 conversation(s)" in err.getvalue()
