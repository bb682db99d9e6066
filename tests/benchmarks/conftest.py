"""The tests of benchmarks/ (marker `bench`): each benchmark measures what it says,
on data small enough for a test (no timing is asserted). Some drive `newt -p`
against the fake server; test_recall_latency_bench.py needs the all-MiniLM-L6-v2
wheel that scripts/get_llama_server.sh keeps in ~/.cache/newt-llama.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.bench)
