"""Where things are, for a test at any depth under tests/: the repository, the
shared fixtures and the fake server's script."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
FIXTURES = TESTS / "fixtures"
FAKE_SERVER = TESTS / "fake_openai.py"  # `python tests/fake_openai.py` as a llama-server stand-in
