"""The end-to-end tier (marker `e2e`): what needs more than Python.

- tmux/: the real `newt` command in a real terminal (tmux, and the `newt` the
  editable install puts beside the interpreter).
- models/: real models from ~/.cache/newt-llama: llama.cpp's llama-server with
  Gemma 3 270M, SmolLM2 or all-MiniLM-L6-v2 (those tests are also marked
  `llama`), and all-MiniLM-L6-v2 in process (recall by meaning for real). The
  `llama_server` fixture runs scripts/get_llama_server.sh, which builds the
  server with cmake the first time.
- packaging/: the wheel built, installed into a fresh venv and run.

scripts/test installs tmux and cmake and fills the cache before it runs pytest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.e2e)
