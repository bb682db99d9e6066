"""Config: paths, precedence, clear errors, comment-preserving writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import tomlkit

from newt.config import (
    RETIRED_KEYS,
    ConfigError,
    RecallConfig,
    default_config_text,
    load_config,
    save_settings,
)
from newt.config_paths import resolve_config_path


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEWT_HOME", str(tmp_path / "home"))
    for var in ("NEWT_CONFIG", "OPENAI_BASE_URL", "OPENAI_API_KEY", "MY_KEY"):
        monkeypatch.delenv(var, raising=False)


def test_defaults_without_a_file(tmp_path: Path) -> None:
    cfg = load_config()
    assert cfg.path == tmp_path / "home" / "config.toml"
    assert cfg.db_path == tmp_path / "home" / "newt.db"
    assert cfg.memory.provider == "token_budget"
    assert cfg.memory.threshold_pct == 0.80
    assert cfg.memory.fold_to == 0.60
    assert cfg.memory.context_tokens is None
    assert cfg.estimation.chars_per_token == 4
    assert cfg.recall.excerpt_tokens == 120
    assert cfg.recall.retained_token_budget == 4096


def test_path_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_config_path() == tmp_path / "home" / "config.toml"
    monkeypatch.setenv("NEWT_CONFIG", str(tmp_path / "env.toml"))
    assert resolve_config_path() == tmp_path / "env.toml"
    assert resolve_config_path(tmp_path / "cli.toml") == tmp_path / "cli.toml"


def test_the_annotated_template_loads_to_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(default_config_text())
    cfg = load_config(path)
    assert cfg.backend.timeout_s == 60.0 and cfg.backend.max_retries == 2
    assert cfg.recall.retained_token_budget == 4096 and cfg.recall.excerpt_tokens == 120
    assert cfg.recall == RecallConfig()
    assert "evidence_order" not in default_config_text()
    assert cfg.recall.embeddings_url == "" and "embeddings_url" in default_config_text()


def test_embeddings_url_names_a_separate_server(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[recall]\nembeddings_url = " http://127.0.0.1:8081/v1/ "\nembedding_model = "minilm"\n'
    )
    cfg = load_config(path)
    assert cfg.recall.embeddings_url == "http://127.0.0.1:8081/v1"
    assert cfg.recall.embedding_model == "minilm"


def test_precedence_defaults_file_env_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[backend]\nbase_url = "http://file/v1"\nmodel = "file-model"\napi_key_env = "MY_KEY"\n'
        "[memory]\ncontext_tokens = 4096\n[context.estimation]\nchars_per_token = 3\n"
    )
    cfg = load_config(path)
    assert (cfg.backend.base_url, cfg.backend.model) == ("http://file/v1", "file-model")
    assert cfg.memory.context_tokens == 4096 and cfg.estimation.chars_per_token == 3
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env/v1/")
    monkeypatch.setenv("MY_KEY", "sk-secret-123")
    cfg = load_config(path)
    assert cfg.backend.base_url == "http://env/v1" and cfg.api_key == "sk-secret-123"
    assert "sk-secret-123" not in repr(cfg)
    cfg = load_config(path, base_url="http://cli/v1", model="cli-model")
    assert (cfg.backend.base_url, cfg.backend.model) == ("http://cli/v1", "cli-model")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[backend]\nmodel = \n", ["line 2", "not valid TOML"]),
        ('[backend]\nmax_retries = "three"\n', ["line 2", "backend.max_retries", "whole number"]),
        ("[memory]\nthreshold_pct = true\n", ["line 2", "memory.threshold_pct", "number"]),
        ('\n[memory]\nprovider = "vector"\n', ["line 3", "memory.provider", "token_budget"]),
        ("[backend]\nmodle = 'x'\n", ["backend.modle", "not a known key", "model"]),
        ("[plugins]\nx = 1\n", ["unknown section [plugins]"]),
        ("[memory]\ncontext_tokens = -5\n", ["memory.context_tokens", "positive"]),
        ("[memory]\nthreshold_pct = 80\n", ["memory.threshold_pct", "fraction", "not 80"]),
        ("[memory]\nfold_to = 60\n", ["memory.fold_to", "0.10 to 1.00", "not 60"]),
        ('[recall]\nembeddings_url = "localhost:8081"\n', ["recall.embeddings_url", "http(s)"]),
    ],
)
def test_bad_files_name_file_line_and_key(tmp_path: Path, text: str, expected: list[str]) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message
    for part in expected:
        assert part in message


def test_missing_explicit_config_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.toml")


def test_save_keeps_comments_and_order(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        "# my own header comment\n[ui]\ntheme = 'nord'  # I like nord\n\n"
        "[backend]\n# where my server lives\nbase_url = \"http://old/v1\"\nmodel = 'a'\n"
    )
    save_settings(path, {"backend": {"base_url": "http://new/v1", "model": "b"}})
    text = path.read_text()
    assert "# my own header comment" in text and "# I like nord" in text
    assert "# where my server lives" in text
    assert text.index("[ui]") < text.index("[backend]")
    assert tomlkit.parse(text)["backend"]["base_url"] == "http://new/v1"  # type: ignore[index]
    assert load_config(path).backend.model == "b"


def test_save_to_a_new_file_starts_from_the_template(tmp_path: Path) -> None:
    path = tmp_path / "new" / "config.toml"
    save_settings(path, {"backend": {"model": "gemma"}})
    text = path.read_text()
    assert "# newt configuration." in text
    assert load_config(path).backend.model == "gemma"


def test_api_keys_are_never_saved(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        save_settings(tmp_path / "c.toml", {"backend": {"api_key": "sk-1"}})


def test_the_key_comes_only_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    cfg = load_config()
    assert cfg.api_key == "sk-openai"
    home = Path(os.environ["NEWT_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[backend]\napi_key_env = "MY_KEY"\n')
    assert load_config().api_key is None
    monkeypatch.setenv("MY_KEY", "sk-mine")
    assert load_config().api_key == "sk-mine"


def test_retired_recall_keys_are_accepted_and_ignored(tmp_path: Path) -> None:
    # the lookup shortcut and the capsule orders are gone; an old file still loads
    assert {
        "recall.evidence_order",
        "recall.focus_questions",
        "recall.focus_temperature",
    } == RETIRED_KEYS
    path = tmp_path / "c.toml"
    path.write_text(
        '[recall]\nevidence_order = "random"\nfocus_questions = "maybe"\n'
        "focus_temperature = 3\nexcerpt_tokens = 80\n"
    )
    cfg = load_config(path)
    assert cfg.recall.excerpt_tokens == 80  # the rest of the table still applies
    for name in ("evidence_order", "focus_questions", "focus_temperature"):
        assert not hasattr(cfg.recall, name)
    # a key that was never known is still an error
    path.write_text("[recall]\nfocus_mode = 1\n")
    with pytest.raises(ConfigError, match=r"recall\.focus_mode"):
        load_config(path)
