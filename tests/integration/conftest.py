"""The integration tier (marker `integration`): the whole app against the loopback
fake server: the TUI driven with Pilot (ui/__snapshots__ holds its pictures), the
`newt` command as a subprocess, real MCP servers, several newts on one database,
and scenarios that wait out real timeouts (the store's 30-second lock wait).
Like tests/unit/ it needs no tmux, cmake, llama-server or model file and reaches
no network, only time (about 5 minutes on 2 cores). One folder per layer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture(autouse=True)
def _no_model_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As in tests/unit/conftest.py: an empty llama cache and a package index that
    refuses, so a session on the default config recalls by words, never with the
    all-MiniLM-L6-v2 in ~/.cache/newt-llama (that is tests/e2e/models/)."""
    monkeypatch.setenv("NEWT_LLAMA_CACHE", str(tmp_path / "newt-llama"))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # no model hub either


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.integration)
