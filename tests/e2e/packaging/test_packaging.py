"""newt as a user installs it: build the wheel, install it into a fresh venv, start the TUI.

Every other test runs newt from the source tree (`pip install -e`), which hides
a module or stylesheet the wheel leaves out. Here the wheel is built from a copy
of the sources (a stale `build/` in the checkout cannot leak files into it),
installed into a new venv with nothing else of ours on its path (what
`pipx install .` does), and the installed `newt` is driven in tmux against the
standalone fake server until a reply arrives.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import fake_process
from tests.support.paths import REPO
from tests.support.tmux import Terminal

ROOT = REPO
REPLY = "Installed newts answer too."
# What a wheel build reads from a checkout; anything else stays behind.
SOURCES = ("pyproject.toml", "setup.py", "README.md", "newt", "assets")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        path = ROOT / name
        if not path.exists():
            continue
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=IGNORE)
        else:
            shutil.copy2(path, src / name)
    out = tmp_path_factory.mktemp("wheelhouse")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(src)],
        check=True,
        cwd=out,
    )
    (built,) = out.glob("newt-*.whl")
    return built


def _source_files() -> set[str]:
    """The wheel paths every file of ours must have: newt/** and assets/* as newt/assets/*."""
    expected = set()
    for path in (ROOT / "newt").rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            expected.add(path.relative_to(ROOT).as_posix())
    for path in (ROOT / "assets").iterdir():
        if path.is_file() and path.suffix != ".pyc":
            expected.add(f"newt/assets/{path.name}")
    return expected


def test_every_package_directory_has_an_init() -> None:
    """Packages are found by their __init__.py; a directory without one would not ship."""
    missing = [
        str(d.relative_to(ROOT))
        for d in [ROOT / "newt", *(ROOT / "newt").rglob("*")]
        if d.is_dir() and any(d.glob("*.py")) and not (d / "__init__.py").exists()
    ]
    assert missing == []


def test_the_wheel_holds_every_module_stylesheet_and_asset(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        shipped = {name for name in zf.namelist() if not name.startswith("newt-")}
        entry_points = zf.read(next(n for n in zf.namelist() if n.endswith("entry_points.txt")))
    expected = _source_files()
    assert any(name.endswith(".tcss") for name in expected)
    assert "newt/ui/screens/chat.tcss" in expected and "newt/assets/config.toml" in expected
    assert sorted(expected - shipped) == []
    assert b"newt = newt.cli.main:main" in entry_points


@pytest.fixture
def installed(tmp_path: Path, wheel: Path) -> Path:
    """A fresh venv holding only the wheel and its dependencies; returns its bin directory.

    The venv gets no pip of its own (this interpreter's pip installs into it
    with --python), and dependencies come through pip's cache, so this takes
    seconds, not minutes.
    """
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", str(wheel)],
        check=True,
        cwd=tmp_path,
    )
    # The copy that runs is the installed one, not this checkout.
    where = subprocess.run(
        [str(python), "-c", "import newt; print(newt.__file__)"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": ""},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(env_dir), where
    return env_dir / "bin"


@pytest.fixture
def fake_server() -> Iterator[str]:
    with fake_process.fake_server("--reply-text", REPLY) as base_url:
        yield base_url


def test_the_installed_newt_opens_the_chat_and_gets_a_reply(
    tmp_path: Path, installed: Path, fake_server: str
) -> None:
    assert shutil.which("tmux"), "tmux is needed (./scripts/test installs it)"
    exit_file = tmp_path / "exit"
    newt = installed / "newt"
    env = {
        "NEWT_HOME": str(tmp_path / "home"),
        "TERM": "xterm-256color",
        "PYTHONPATH": "",
    }
    term = Terminal()
    try:
        term.start(
            # the sleep keeps the pane (and any traceback) readable after newt exits
            f"cd {tmp_path} && {newt} --base-url {fake_server} --model fake-model; "
            f"echo $? > {exit_file}; sleep 60",
            env,
        )
        # the chat screen, styled from its .tcss
        term.wait_for("Enter sends", timeout=30, exit_file=exit_file)
        term.keys("are you installed?")
        term.keys("Enter")
        term.wait_for(REPLY, timeout=30, exit_file=exit_file)
        term.keys("C-q")
        deadline = time.monotonic() + 15
        while not exit_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert exit_file.read_text().strip() == "0", term.screen()
    finally:
        term.kill()
