"""`newt --local` with no model runs SmolLM2-135M-Instruct from the cache, replies capped
at the reserve newt keeps for them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from newt.local.server import DEFAULT_CTX, reply_token_cap
from tests.support.paths import FAKE_SERVER
from tests.support.session_helpers import newt_cmd


def test_local_without_a_model_runs_the_instruct_model(
    tmp_path: Path, _isolated_home: Path
) -> None:
    # a stand-in for llama-server that records its arguments (the fake speaks its flags)
    fake = FAKE_SERVER
    argfile = tmp_path / "argv"
    cache = tmp_path / "cache"
    binary = cache / "llama-server-11434.0.0" / "llama-server"
    binary.parent.mkdir(parents=True)
    binary.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$@" > "{argfile}"\nexec "{sys.executable}" "{fake}" "$@"\n'
    )
    binary.chmod(0o755)
    (cache / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF")
    (cache / "gemma-3-270m-q4_k_m.gguf").write_bytes(b"GGUF")
    result = newt_cmd(
        "--local",
        "-p",
        "hello",
        "--json",
        home=_isolated_home,
        env={"NEWT_LLAMA_CACHE": str(cache), "NEWT_LLAMA_SERVER": ""},
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["reply"] == "ok: hello"
    argv = argfile.read_text().splitlines()
    assert argv[argv.index("-m") + 1] == str(cache / "SmolLM2-135M-Instruct.Q4_1.gguf")
    assert argv[argv.index("-n") + 1] == str(reply_token_cap()) == "512"
    assert argv[argv.index("-c") + 1] == str(DEFAULT_CTX)
    # prompts read in small batches: progress to show, and Esc frees the server soon
    assert argv[argv.index("-b") + 1] == argv[argv.index("-ub") + 1] == "256"


def test_the_reply_cap_is_the_reply_reserve() -> None:
    from newt.agent.turn.model_facts import REPLY_RESERVE_MAX

    for ctx in (1024, 2048, 8192, 131072):
        assert reply_token_cap(ctx) == min(REPLY_RESERVE_MAX, ctx // 4)
