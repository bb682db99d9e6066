"""A NEWT_HOME of the test's own, and the config of the real app against the fake
OpenAI server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from newt.config import Config, load_config
from tests.support.fake_openai import FakeOpenAI


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NEWT_HOME", str(tmp_path / "home"))
    for var in ("NEWT_CONFIG", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def config_for(server: FakeOpenAI, **memory: Any) -> Config:
    config = load_config(base_url=server.base_url, model="fake-model")
    config.backend.max_retries = 0
    for key, value in memory.items():
        setattr(config.memory, key, value)
    return config


def config(fake: FakeOpenAI) -> Config:
    cfg = config_for(fake)
    cfg.recall.embeddings = "off"  # words are enough here, and quicker
    return cfg
