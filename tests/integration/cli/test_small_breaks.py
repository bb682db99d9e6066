"""The smaller breaks a new user hit, each as a user meets it."""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_openai import FakeOpenAI
from tests.support.session_helpers import MODEL, newt_cmd


def test_a_config_file_that_is_not_utf8_is_a_clear_error(
    fake_openai: FakeOpenAI, _isolated_home: Path
) -> None:
    config = _isolated_home / "config.toml"
    config.write_bytes(b'[backend]\ntimeout_s = 30.0\n# caf\xe9 in Latin-1\nmodel = "x"\n')
    result = newt_cmd(
        "--base-url", fake_openai.base_url, "--model", MODEL, "-p", "hi", home=_isolated_home
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"{config}, line 3, column 6: the config file is not UTF-8 text" in result.stderr
    assert config.read_bytes().endswith(b'model = "x"\n')  # nothing rewritten or lost
    assert fake_openai.chat_requests == []


def test_threshold_pct_outside_its_range_is_refused(
    fake_openai: FakeOpenAI, _isolated_home: Path
) -> None:
    for bad in ("5", "0.05", "1.0"):
        (_isolated_home / "config.toml").write_text(f"[memory]\nthreshold_pct = {bad}\n")
        result = newt_cmd(
            "--base-url", fake_openai.base_url, "--model", MODEL, "-p", "hi", home=_isolated_home
        )
        assert result.returncode == 2 and "Traceback" not in result.stderr, bad
        assert "memory.threshold_pct must be a fraction from 0.10 to 0.99" in result.stderr
        assert f"not {float(bad):g}" in result.stderr
    (_isolated_home / "config.toml").write_text("[memory]\nthreshold_pct = 0.5\n")
    result = newt_cmd(
        "--base-url", fake_openai.base_url, "--model", MODEL, "-p", "hi", home=_isolated_home
    )
    assert result.returncode == 0, result.stderr
