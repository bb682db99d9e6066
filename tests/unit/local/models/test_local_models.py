"""The local-model catalogue, its downloads and discovery (newt/local/models).

Downloads run against tests/support/fake_hub.py on 127.0.0.1 (HF_ENDPOINT points at
it, HF_HOME at a tmp dir) serving a tiny valid GGUF: the tests check the
transfer, resume and verification, never run the model. This machine reaches
no model hub, so the catalogue's own files are checked for shape only.
"""

from __future__ import annotations

import dataclasses
import io
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from newt.local.models import catalogue as cat
from newt.local.models import cli
from newt.local.models.catalogue import CatalogueModel, parse_catalogue, recommend
from newt.local.models.discover import discover
from newt.local.models.download import DownloadError, Transfer, cached_path, download
from newt.local.models.sampling import Sampling, parse_sampling
from newt.resources import asset_text
from tests.support.fake_hub import COMMIT, Hub, gguf_bytes, serve
from tests.support.local_machine import fake_machine

REPO, FILE = "tester/Tiny-Chat-GGUF", "tiny-chat-Q4_K_M.gguf"
PAYLOAD = gguf_bytes({"general.architecture": "llama"}, padding=300_000)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for var in ("HF_HUB_CACHE", "XDG_CACHE_HOME", "OLLAMA_MODELS", "HF_HUB_OFFLINE", "HF_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def hub(env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Hub]:
    hub = Hub(files={f"{REPO}/{FILE}": PAYLOAD})
    server = serve(hub)
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    yield hub
    server.shutdown()


def model(**changes: object) -> CatalogueModel:
    base = CatalogueModel(
        name="tiny", title="Tiny Chat", repo=REPO, revision="main", filename=FILE,
        licence="MIT", size_bytes=len(PAYLOAD), ram_bytes=len(PAYLOAD) * 2,
        context_tokens=4096, about="a test model",
    )  # fmt: skip
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def blobs(tmp_path: Path) -> Path:
    return tmp_path / "hf" / "hub" / f"models--{REPO.replace('/', '--')}" / "blobs"


# -- the catalogue ----------------------------------------------------------------------


def test_the_shipped_catalogue_has_the_shape_the_downloads_rely_on() -> None:
    models = parse_catalogue(asset_text("local_models.toml"))
    assert len(models) >= 3
    assert [m.ram_bytes for m in models] == sorted(m.ram_bytes for m in models)
    for m in models:
        assert m.filename.endswith(".gguf") and "Q4_K_M" in m.filename.upper()
        assert 500_000_000 < m.size_bytes < 10_000_000_000 and m.ram_bytes > m.size_bytes
        assert m.context_tokens >= 8192 and m.licence
        assert m.sha256 is None or len(m.sha256) == 64
    assert sum(m.sha256 is not None for m in models) >= 3


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ("size_bytes = 1117320736", "size_bytes must be a int"),
        ('sha256 = "6a1a2eb6d15622bf3c96857206351ba97e1af16c30d7a74ee38970e434e9407e"', "sha256"),
        ('filename = "qwen2.5-1.5b-instruct-q4_k_m.gguf"', "filename"),
    ],
)
def test_a_wrong_catalogue_entry_is_refused(change: str, error: str) -> None:
    text = asset_text("local_models.toml")
    broken = {
        "size_bytes": text.replace(change, 'size_bytes = "1 GB"', 1),
        "sha256": text.replace(change, 'sha256 = "ABC"', 1),
        "filename": text.replace(change, 'filename = "qwen.bin"', 1),
    }[error.split()[0]]
    assert broken != text
    with pytest.raises(ValueError, match=error.split()[0]):
        parse_catalogue(broken)


def test_each_model_is_sampled_as_its_publisher_ships_it() -> None:
    """Every catalogue model carries its publisher's sampling, as llama-server flags."""
    models = {m.name: m for m in parse_catalogue(asset_text("local_models.toml"))}
    assert all(m.sampling is not None for m in models.values())
    coder = models["qwen2.5-coder-1.5b"].sampling
    assert coder == Sampling(temperature=0.7, top_p=0.8, top_k=20, repeat_penalty=1.1)
    assert coder.server_args() == [
        "--temp", "0.7", "--top-p", "0.8", "--top-k", "20", "--repeat-penalty", "1.1",
    ]  # fmt: skip
    assert models["llama3.2-3b"].sampling == Sampling(temperature=0.6, top_p=0.9)
    assert models["qwen3-4b"].sampling.values() == {  # type: ignore[union-attr]
        "temperature": 0.6, "top_p": 0.95, "top_k": 20, "min_p": 0.0,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("table", "error"),
    [
        ({"seed": 4}, "unknown sampling keys"),
        ({"temperature": 5}, "temperature must be a number from 0 to 2"),
        ({"top_k": 2.5}, "top_k must be a whole number"),
        ({"top_k": True}, "top_k must be a whole number"),
        ({"top_p": "0.8"}, "top_p must be a number"),
        ({}, "must be a table"),
    ],
)
def test_a_wrong_sampling_table_is_refused(table: dict[str, object], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_sampling(table, "model 2")
    text = asset_text("local_models.toml")
    broken = text.replace("top_k = 20\n", "top_k = 20\nseed = 4\n", 1)
    with pytest.raises(ValueError, match=r"model 1 \(qwen2.5-1.5b\): unknown sampling keys"):
        parse_catalogue(broken)


def test_the_recommendation_is_the_largest_that_fits_ram_and_disk() -> None:
    models = cat.catalogue()
    gb = 1_000_000_000
    assert recommend(8 * gb, 100 * gb) == max(
        (m for m in models if m.ram_bytes <= 4 * gb), key=lambda m: m.ram_bytes
    )
    assert recommend(32 * gb, 100 * gb) == models[-1]
    assert recommend(32 * gb, 2 * gb) is None or recommend(32 * gb, 2 * gb).size_bytes < gb
    assert recommend(2 * gb, 100 * gb) is None
    assert recommend(None, 100 * gb) == models[0]


def test_machine_ram_is_read_from_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:        8000000 kB\nMemFree: 1 kB\n")
    assert cat.machine_ram_bytes(meminfo) == 8_192_000_000
    assert (cat.machine_ram_bytes(tmp_path / "absent") or 0) > 0  # os.sysconf


# -- downloads ----------------------------------------------------------------------------


def test_a_download_lands_in_the_hf_cache_verified(hub: Hub, tmp_path: Path) -> None:
    seen: list[Transfer] = []
    path = download(model(), progress=seen.append)
    assert path.read_bytes() == PAYLOAD
    snapshot = tmp_path / "hf" / "hub" / f"models--{REPO.replace('/', '--')}" / "snapshots"
    assert path == snapshot / COMMIT / FILE and path.is_symlink()
    assert path.resolve() == blobs(tmp_path) / hub.sha(f"{REPO}/{FILE}")
    assert seen and seen[-1].done == len(PAYLOAD) and seen[-1].fraction == 1.0
    assert "Downloading Tiny Chat" in seen[-1].describe("Tiny Chat")
    assert cached_path(model()) == path
    before = len(hub.requests)
    assert download(model()) == path and len(hub.requests) == before  # no second fetch


def test_ctrl_c_keeps_a_partial_that_the_next_run_resumes(
    hub: Hub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("huggingface_hub.constants.DOWNLOAD_CHUNK_SIZE", 16_384)

    def interrupt(t: Transfer) -> None:  # Ctrl-C at the first report, a chunk in
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        download(model(), progress=interrupt)
    partial = blobs(tmp_path) / f"{hub.sha(f'{REPO}/{FILE}')}.incomplete"
    kept = partial.stat().st_size
    assert 0 < kept < len(PAYLOAD)
    assert cached_path(model()) is None
    path = download(model())
    assert path.read_bytes() == PAYLOAD and not partial.exists()
    assert ("GET", f"/{REPO}/resolve/main/{FILE}", f"bytes={kept}-") in hub.requests


def test_a_dropped_connection_resumes_where_it_stopped(
    hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    # huggingface_hub writes whole chunks: what it received of the last one is refetched
    monkeypatch.setattr("huggingface_hub.constants.DOWNLOAD_CHUNK_SIZE", 16_384)
    hub.drop_after = 120_000
    path = download(model())
    assert path.read_bytes() == PAYLOAD
    ranges = [r for method, _, r in hub.requests if method == "GET"]
    assert ranges == [None, f"bytes={16_384 * (120_000 // 16_384)}-"]


def test_a_corrupted_file_is_refused_and_removed(hub: Hub, tmp_path: Path) -> None:
    hub.corrupt = True
    with pytest.raises(DownloadError, match="damaged"):
        download(model())
    assert cached_path(model()) is None
    assert not any(blobs(tmp_path).iterdir())  # neither a blob nor a partial is left


def test_a_catalogue_checksum_the_hub_does_not_match_downloads_nothing(hub: Hub) -> None:
    with pytest.raises(DownloadError, match="not the file newt's catalogue names"):
        download(model(sha256="0" * 64))
    assert [m for m, _, _ in hub.requests] == ["HEAD"]


def test_a_gated_model_says_how_to_get_access(hub: Hub) -> None:
    hub.gated = True
    with pytest.raises(DownloadError) as caught:
        download(model())
    message = str(caught.value)
    assert "gated" in message and f"{hub.url}/{REPO}" in message and "hf auth login" in message


def test_no_network_is_a_clear_error(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(DownloadError, match=r"Could not reach http://127\.0\.0\.1"):
        download(model())


def test_too_little_disk_downloads_nothing(hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("newt.local.models.download.free_disk_bytes", lambda _: 10_000)
    with pytest.raises(DownloadError, match="Not enough disk space"):
        download(model())
    assert [m for m, _, _ in hub.requests] == ["HEAD"]


# -- discovery -----------------------------------------------------------------------------


def test_discovery_finds_the_chat_models_and_leaves_out_embeddings(
    env: Path, tmp_path: Path
) -> None:
    paths = fake_machine(env, tmp_path)
    found = {m.name: m for m in discover()}
    assert set(found) == {
        "Qwen/Qwen3-4B-GGUF/Qwen3-4B-Q4_K_M.gguf",
        "lmstudio-community/Llama-3.2-3B-Instruct-GGUF/Llama-3.2-3B-Instruct-Q4_K_M.gguf",
        "llama3.2:3b",
    }
    assert found["llama3.2:3b"].path == paths["llama3.2"]  # the blob itself, not a copy
    assert found["llama3.2:3b"].source == "Ollama"
    assert found["llama3.2:3b"].size_bytes == paths["llama3.2"].stat().st_size
    assert {m.source for m in found.values()} == {"Hugging Face cache", "LM Studio", "Ollama"}


# -- the command line ------------------------------------------------------------------------


def test_list_shows_what_is_here_then_the_catalogue_with_a_recommendation(
    hub: Hub, env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a hub that answers, the largest model that fits is recommended
    (tests/unit/local/models/test_local_models_pypi.py: with none, only what PyPI has)."""
    fake_machine(env, tmp_path)
    monkeypatch.setattr(cli, "machine_ram_bytes", lambda: 8_000_000_000)
    monkeypatch.setattr(cli, "free_disk_bytes", lambda _: 100_000_000_000)
    out = io.StringIO()
    assert cli.list_main(out) == 0
    text = out.getvalue()
    assert text.index("llama3.2:3b") < text.index("To download")
    best = recommend(8_000_000_000, 100_000_000_000)
    assert best is not None and f"* {best.name}" in text
    assert "too big for this machine" in text and "SmolLM2" in text
    assert "nomic" not in text


def test_resolve_local_takes_a_path_a_found_name_or_a_catalogue_name(
    hub: Hub, env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = fake_machine(env, tmp_path)
    assert cli.resolve_local(str(paths["hf"])) == paths["hf"]
    assert cli.resolve_local("llama3.2:3b") == paths["llama3.2"]
    monkeypatch.setattr(cli, "find", lambda name: model() if name == "tiny" else None)
    err = io.StringIO()
    got = cli.resolve_local("tiny", stderr=err)
    assert got.read_bytes() == PAYLOAD and "Ctrl-C stops" in err.getvalue()
    with pytest.raises(cli.LocalModelError, match="newt --local --list"):
        cli.resolve_local("no-such-model")


def test_newt_local_list_and_an_unknown_name_through_the_command(
    env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`newt --local --list` prints the list; `newt --local NAME` with a name newt does not
    know exits 2 with the way to find one, before any server starts."""
    from newt.cli.main import main

    fake_machine(env, tmp_path)
    assert main(["--local", "--list"]) == 0
    assert "llama3.2:3b" in capsys.readouterr().out
    assert main(["--list"]) == 2
    assert "--local --list" in capsys.readouterr().err
    assert main(["--local", "no-such-model", "-p", "hi"]) == 2
    err = capsys.readouterr().err
    assert "newt --local --list" in err and "Traceback" not in err
