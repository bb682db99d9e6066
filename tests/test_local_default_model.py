"""`newt --local` with no model runs SmolLM2-135M-Instruct from the cache, replies capped
at the reserve newt keeps for them, sampling as the model card recommends."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx

from newt.backend.local_server import (
    DEFAULT_CTX,
    LocalLlamaServer,
    chat_server_args,
    reply_token_cap,
)
from tests.agent_helpers import newt_cmd
from tests.llama_server import obtain_instruct_model, obtain_llama_server


def test_local_without_a_model_runs_the_instruct_model(
    tmp_path: Path, _isolated_home: Path
) -> None:
    # a stand-in for llama-server that records its arguments (the fake speaks its flags)
    fake = Path(__file__).with_name("fake_openai.py")
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
    # SmolLM2's model card samples at temperature 0.2, top_p 0.9 (the server's 0.8
    # made the small model wander off the evidence it was shown)
    assert argv[argv.index("--temp") + 1] == "0.2"
    assert argv[argv.index("--top-p") + 1] == "0.9"


def test_other_models_keep_the_servers_sampling(tmp_path: Path) -> None:
    other = chat_server_args(tmp_path / "some-other-model.Q4_K_M.gguf")
    assert other == ["-n", str(reply_token_cap())]
    assert "--temp" in chat_server_args(None)  # no model given: SmolLM2


def test_the_real_server_samples_as_the_card_says() -> None:
    binary, _gemma = obtain_llama_server()
    model = obtain_instruct_model()
    with LocalLlamaServer(
        model, binary=binary, threads=1, extra_args=chat_server_args(model)
    ) as server:
        props = httpx.get(server.root_url + "/props", timeout=30).json()
    params = props["default_generation_settings"]["params"]
    assert round(params["temperature"], 3) == 0.2
    assert round(params["top_p"], 3) == 0.9


def test_the_reply_cap_is_the_reply_reserve() -> None:
    from newt.agent.capability_tracker import REPLY_RESERVE_MAX

    for ctx in (1024, 2048, 8192, 131072):
        assert reply_token_cap(ctx) == min(REPLY_RESERVE_MAX, ctx // 4)
