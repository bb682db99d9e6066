"""Where things are, for a test at any depth under tests/: the repository, the
shared fixtures and the fake server's script."""

from __future__ import annotations

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
TESTS = SUPPORT.parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
# `python tests/support/fake_openai.py` as a llama-server stand-in
FAKE_SERVER = SUPPORT / "fake_openai.py"
