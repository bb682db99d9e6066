"""The unit tier (marker `unit`): one layer at a time, in process, against an
httpx.MockTransport backend (tests/support/mock_backend.py) where a test hands the
client its transport, the loopback fake server (tests/support/fake_openai.py) where it
needs a connection or a whole session, real SQLite files in tmp_path and stand-in
binaries. No tmux, cmake, llama-server or model file: on a fresh clone
`pytest tests/unit` (or `-m unit`) runs it in well under a minute.

One folder per package (or top-level module) of newt/, plus project/ for the
checks of the whole codebase (layers, module size, the error tree). A test that
drives the whole app or waits out real timeouts goes to tests/integration/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture(autouse=True)
def _no_model_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing here reads ~/.cache/newt-llama or reaches a package index. A session
    on the default config embeds in process, so it would use the cached
    all-MiniLM-L6-v2 or fetch it from PyPI in the background: here the cache is
    empty and the index refuses, so recall is by words (a test sets its own)."""
    monkeypatch.setenv("NEWT_LLAMA_CACHE", str(tmp_path / "newt-llama"))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # no model hub either


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.unit)
