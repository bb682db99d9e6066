"""`newt` as a user runs it: a real subprocess, real files, no tracebacks."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from newt import __version__
from tests.support.session_helpers import newt_cmd


def run_newt(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return newt_cmd(*args, home=home)


def test_version_and_help(tmp_path: Path) -> None:
    result = run_newt("--version", home=tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == f"newt {__version__}"
    result = run_newt("--help", home=tmp_path)
    assert result.returncode == 0
    commands = ("list", "export", "rename", "delete", "memory", "import")
    for flag in ("--continue", "--resume", "--print", "--json", "--local", *commands):
        assert flag in result.stdout


def test_list_on_a_fresh_store(tmp_path: Path) -> None:
    result = run_newt("list", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "no conversations yet"
    assert (tmp_path / "newt.db").exists()


def test_list_shows_saved_conversations(tmp_path: Path) -> None:
    run_newt("list", home=tmp_path)  # creates the schema
    con = sqlite3.connect(tmp_path / "newt.db")
    con.execute(
        "INSERT INTO conversations(id, title, created_at, updated_at)"
        " VALUES ('abc123def456789', 'Planning the \x1b[31mtrip', 1, 1700000000)"
    )
    for i in range(3):  # three messages, two answered: five messages
        con.execute(
            "INSERT INTO turns(conversation_id, user, assistant, created_at)"
            " VALUES ('abc123def456789', ?, ?, 1)",
            (f"q{i}", f"a{i}" if i else ""),
        )
    con.commit()
    con.close()
    result = run_newt("list", home=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["ID", "UPDATED", "MESSAGES", "TITLE"]
    assert lines[1].startswith("abc123def456")
    assert " 5  Planning the trip" in lines[1]
    assert "\x1b" not in result.stdout


def test_broken_config_gives_one_clear_line(tmp_path: Path) -> None:
    (tmp_path).mkdir(exist_ok=True)
    (tmp_path / "config.toml").write_text("[memory]\nprovider = 'magic'\n")
    result = run_newt("list", home=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1
    assert "config.toml, line 2: memory.provider 'magic' is unknown" in result.stderr


def test_syntax_error_in_config(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[backend\nmodel='x'\n")
    result = run_newt("list", home=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "line 1" in result.stderr and "not valid TOML" in result.stderr


def test_not_a_database(tmp_path: Path) -> None:
    (tmp_path / "newt.db").write_text("hello, I am a text file")
    result = run_newt("list", home=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "is not a newt database" in result.stderr
    assert (tmp_path / "newt.db").read_text() == "hello, I am a text file"


def test_newer_database(tmp_path: Path) -> None:
    run_newt("list", home=tmp_path)
    con = sqlite3.connect(tmp_path / "newt.db")
    con.execute("INSERT INTO schema_migrations VALUES (42, 'future', 0)")
    con.commit()
    con.close()
    result = run_newt("list", home=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "newer newt" in result.stderr
