"""Private by default: what newt creates only its owner can read, under the usual umask 022.

What already exists keeps the mode its owner gave it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from newt.config import load_config, save_settings
from newt.files import create_private_file, ensure_private_dir, write_private
from newt.store import Store
from tests.support.fake_openai import FakeOpenAI
from tests.support.paths import REPO

ROOT = REPO


@pytest.fixture(autouse=True)
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


async def test_a_fresh_data_directory_database_wal_and_shm_are_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "not" / "yet" / "home"
    monkeypatch.setenv("NEWT_HOME", str(home))
    config = load_config()
    assert config.db_path is not None
    async with await Store.open(config.db_path) as store:
        await store.notes.add("my private note")  # a write: the -wal file now exists
        db = config.db_path
        assert mode(home) == 0o700
        assert mode(db) == 0o600
        assert mode(Path(f"{db}-wal")) == 0o600
        assert mode(Path(f"{db}-shm")) == 0o600
    assert mode(home.parent) == 0o755  # ordinary parents are left ordinary


async def test_existing_directory_and_database_keep_their_modes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o750)
    monkeypatch.setenv("NEWT_HOME", str(home))
    async with await Store.open(home / "newt.db") as store:
        await store.notes.add("shared with my group on purpose")
    (home / "newt.db").chmod(0o640)
    async with await Store.open(home / "newt.db") as store:
        assert await store.notes.list() == ["shared with my group on purpose"]
    assert mode(home) == 0o750
    assert mode(home / "newt.db") == 0o640


def test_the_config_directory_and_file_are_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NEWT_HOME")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    path = load_config().path
    assert path is not None and not path.parent.exists()
    save_settings(path, {"backend": {"model": "qwen"}})
    assert path.parent == tmp_path / "xdg-config" / "newt"
    assert mode(path.parent) == 0o700
    assert mode(path) == 0o600
    assert mode(tmp_path / "xdg-config") == 0o755
    assert load_config().backend.model == "qwen"


def test_saving_keeps_an_existing_config_files_mode_and_place(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "newt.toml"
    real.parent.mkdir()
    real.write_text('[backend]\nmodel = "old"  # my comment\n')
    real.chmod(0o644)
    link = tmp_path / "home" / "config.toml"
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(real)
    save_settings(link, {"backend": {"model": "new"}})
    assert link.is_symlink()  # the file stays where the user keeps it
    assert mode(real) == 0o644
    assert real.read_text() == '[backend]\nmodel = "new"  # my comment\n'
    assert sorted(p.name for p in real.parent.iterdir()) == ["newt.toml"]  # no temp files


def test_write_private_creates_0600_and_keeps_an_existing_mode(tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    exports.mkdir()
    export = exports / "newt-1234-chat.md"
    write_private(export, "# my conversation\n")
    assert mode(export) == 0o600
    assert export.read_text() == "# my conversation\n"
    export.chmod(0o644)
    write_private(export, "# again\n")
    assert mode(export) == 0o644 and export.read_text() == "# again\n"
    assert [p.name for p in exports.iterdir()] == [export.name]  # no temp files left


def test_helpers_respect_what_exists(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o755)
    ensure_private_dir(mine)
    assert mode(mine) == 0o755
    ensure_private_dir(tmp_path / "new")
    assert mode(tmp_path / "new") == 0o700
    assert create_private_file(tmp_path / "f") is True
    assert mode(tmp_path / "f") == 0o600
    (tmp_path / "f").chmod(0o644)
    assert create_private_file(tmp_path / "f") is False
    assert mode(tmp_path / "f") == 0o644


def test_a_first_newt_p_on_a_fresh_machine_leaves_nothing_readable_by_others(
    tmp_path: Path,
) -> None:
    """The real command with XDG directories (no NEWT_HOME), as on a new account."""
    env = {k: v for k, v in os.environ.items() if k != "NEWT_HOME"}
    env |= {
        "XDG_DATA_HOME": str(tmp_path / "share"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": str(ROOT),
    }
    with FakeOpenAI() as server:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "newt",
                "--base-url",
                server.base_url,
                "--model",
                "m",
                "-p",
                "hi",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    data = tmp_path / "share" / "newt"
    assert mode(data) == 0o700
    assert mode(data / "newt.db") == 0o600
    for path in data.iterdir():
        assert mode(path) & 0o077 == 0, path
