"""Shared fixtures: every test gets its own NEWT_HOME and no stray backend settings."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = [
    "tests.support.fake_openai",
    "tests.support.llama_server",
    "tests.support.mock_backend",
    "tests.support.package_index",
]


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "newt-home"
    home.mkdir()
    monkeypatch.setenv("NEWT_HOME", str(home))
    for var in ("NEWT_CONFIG", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    # a local model stops with the newt a test runs (test_warm_server.py keeps one warm)
    monkeypatch.setenv("NEWT_LOCAL_KEEP_ALIVE", "0")
    return home
