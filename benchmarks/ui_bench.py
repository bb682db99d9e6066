"""TUI benchmarks: launch, streaming, and opening a long conversation, in-process.

What a person sees in a terminal is measured by `benchmarks/terminal_bench.py`
(the installed `newt` in tmux); the README quotes that one. This
one stays as the quick headless check of the app's own code paths.

    python benchmarks/ui_bench.py            # all three, each in a fresh process
    python benchmarks/ui_bench.py launch     # one of: launch | stream | open

The app runs headless (Textual's `run_test`, the same code path as a terminal
minus the driver's writes) against the standalone fake OpenAI server
(`python -m tests.support.fake_openai`) in another process, so the CPU figures are the
UI process's own. Each measurement runs in a new process so peak RSS is not
inherited from a previous one.

  launch  database of 1,000 conversations and 100,000 turns (plus their recall
          records); time from constructing the app to the chat screen with a
          focused prompt.                                  target < 0.5 s
  stream  an 8,000-token reply sent as fast as the fake server can; time from
          the session's last text event (the server's last chunk, as received)
          until the complete reply is on screen, plus Enter-to-shown wall time
          and the UI process's CPU seconds.                 target < 0.5 s
  open    `newt -r ID` on a 2,000-turn conversation; time to interactive
          (history shown, prompt focused) and the process's peak RSS.
                                                   targets < 1 s, < 250 MB
"""

from __future__ import annotations

import asyncio
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGETS = {"launch": 0.5, "stream": 0.5, "open": 1.0}


# -- fixtures: databases and the fake server ------------------------------------------


async def _migrate(db_path: Path) -> None:
    from newt.store import Store

    store = await Store.open(db_path)
    await store.close()


def seed(db_path: Path, conversations: int, turns_each: int, reply_words: int = 40) -> str:
    """Fill a database quickly with raw inserts; returns the newest conversation id."""
    asyncio.run(_migrate(db_path))
    conn = sqlite3.connect(db_path)
    now = time.time()
    reply = " ".join(f"word{i % 97}" for i in range(reply_words))
    turn_id = 0
    last = ""
    with conn:
        for c in range(conversations):
            conv_id = f"{c:08x}" + "0" * 24
            last = conv_id
            t0 = now - (conversations - c) * 60
            conn.execute(
                "INSERT INTO conversations(id, title, model, base_url, created_at, updated_at)"
                " VALUES (?, ?, 'fake-model', '', ?, ?)",
                (conv_id, f"Conversation number {c}", t0, t0),
            )
            turns, records = [], []
            for t in range(turns_each):
                turn_id += 1
                user = f"question {t} of conversation {c} about topic {t % 13}"
                turns.append((turn_id, conv_id, user, f"{reply} {t}", 50 + t, 40, t0 + t))
                records.append(
                    (f"t{turn_id}", conv_id, turn_id, f"User: {user}\nAssistant: {reply}", t0 + t)
                )
            conn.executemany(
                "INSERT INTO turns(id, conversation_id, kind, status, user, assistant,"
                " tokens_in, tokens_out, created_at)"
                " VALUES (?, ?, 'turn', 'complete', ?, ?, ?, ?, ?)",
                turns,
            )
            conn.executemany(
                "INSERT INTO memory_records(key, source, conversation_id, turn_id, content,"
                " created_at) VALUES (?, 'turn', ?, ?, ?, ?)",
                records,
            )
    conn.close()
    return last


class FakeServer:
    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.fake_openai", "--port", "0", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.base_url = line.split("listening on", 1)[1].strip()

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


# -- measurements (each runs in its own process) ----------------------------------------


async def _until(pilot: Any, ready: Any, timeout: float = 60.0) -> None:
    deadline = time.perf_counter() + timeout
    while not ready():
        if time.perf_counter() > deadline:
            raise TimeoutError("the app never became ready")
        await asyncio.sleep(0.001)


def _chat(app: Any) -> Any:
    """The app's screen, the chat screen once it is interactive."""
    from newt.ui.screens.chat import ChatScreen

    screen = app.screen
    assert isinstance(screen, ChatScreen), screen
    return screen


def _interactive(app: Any) -> bool:
    from newt.ui.screens.chat import ChatScreen

    screen = app.screen
    return (
        isinstance(screen, ChatScreen)
        and screen.is_mounted
        and screen.focused is not None
        and screen.focused.id == "prompt-area"
        and not any(w.is_running for w in screen.workers)
    )


def _config(base_url: str) -> Any:
    from newt.config import load_config

    return load_config(base_url=base_url, model="fake-model")


async def measure_launch(home: Path, base_url: str, resume: str | None = None) -> dict[str, float]:
    from newt.ui.app import NewtApp
    from newt.ui.open_request import OpenRequest

    t0 = time.perf_counter()
    app = NewtApp(_config(base_url), opening=OpenRequest(resume=resume))
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(
            pilot, lambda: _interactive(app) and (resume is None or _chat(app).log_view.entries)
        )
        # one refresh with everything in place; not pause(), which waits until the
        # whole process idles, up to a second, while MiniLM loads on its own thread
        await pilot.pause(0)
        elapsed = time.perf_counter() - t0
        entries = len(_chat(app).log_view.entries) if resume else 0
        for _ in range(5):  # the background work done (MiniLM loaded): its memory counts
            await pilot.pause()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": elapsed, "peak_mb": peak_mb, "entries": entries}


async def measure_stream(home: Path, base_url: str) -> dict[str, float]:
    from newt.agent.events import TextDelta, TurnDone
    from newt.ui.app import NewtApp
    from newt.ui.widgets.messages import AssistantMessage

    app = NewtApp(_config(base_url))
    marks: dict[str, float] = {}
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: _interactive(app))
        session = app.session
        assert session is not None
        original = session.turns.send

        async def timed_send(text: str) -> Any:
            async for event in original(text):
                if isinstance(event, TextDelta):
                    marks["last_chunk"] = time.perf_counter()
                elif isinstance(event, TurnDone):
                    marks["reply_chars"] = len(event.reply)
                yield event

        session.turns.send = timed_send  # type: ignore[method-assign]
        screen = _chat(app)
        screen.prompt.set_text("go")
        cpu0, t0 = time.process_time(), time.perf_counter()
        await pilot.press("enter")

        def shown() -> bool:
            views = list(screen.query(AssistantMessage))
            return bool(views) and views[-1].entry.status == "complete" and not screen.busy

        await _until(pilot, shown, timeout=120)
        await pilot.pause()
        t1, cpu1 = time.perf_counter(), time.process_time()
        view = list(screen.query(AssistantMessage))[-1]
        text = view.entry.text
    return {
        "seconds": t1 - marks["last_chunk"],
        "enter_to_shown": t1 - t0,
        "cpu_seconds": cpu1 - cpu0,
        "reply_chars": float(len(text)),
    }


def child(kind: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        os.environ["NEWT_HOME"] = str(home)
        os.environ.pop("NEWT_CONFIG", None)
        resume = None
        if kind == "launch":
            seed(home / "newt.db", 1000, 100)
        elif kind == "open":
            resume = seed(home / "newt.db", 1, 2000)
        args = ["--tokens-per-reply", "8000"] if kind == "stream" else []
        server = FakeServer(*args)
        try:
            if kind == "stream":
                result = asyncio.run(measure_stream(home, server.base_url))
            else:
                result = asyncio.run(measure_launch(home, server.base_url, resume))
        finally:
            server.close()
    print(kind, " ".join(f"{k}={v:.3f}" for k, v in result.items()), flush=True)


def main() -> None:
    if len(sys.argv) > 1:
        child(sys.argv[1])
        return
    for kind in ("launch", "stream", "open"):
        out = subprocess.run(
            [sys.executable, __file__, kind], capture_output=True, text=True, cwd=ROOT
        )
        line = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr[-2000:]
        figures = dict(p.split("=") for p in line.split()[1:] if "=" in p)
        seconds = float(figures.get("seconds", "nan"))
        verdict = "ok" if seconds < TARGETS[kind] else "SLOW"
        if kind == "open" and float(figures.get("peak_mb", 0)) >= 250:
            verdict = "HEAVY"
        print(f"{line}  (target < {TARGETS[kind]} s) {verdict}")


if __name__ == "__main__":
    main()
