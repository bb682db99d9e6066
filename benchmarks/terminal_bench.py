"""Streaming and startup of the installed `newt` in a real terminal.

    python benchmarks/terminal_bench.py                 # everything below, one run each
    python benchmarks/terminal_bench.py --only stream --sizes 2000 --runs 2
    python benchmarks/terminal_bench.py --newt /path/to/bin/newt   # skip the install

What a person sees, measured from outside the process: the benchmark builds
the wheel (`pip wheel --no-deps .`), installs it into a fresh venv under /tmp,
and runs that `newt` in tmux (120x40) against the standalone fake server
(`python -m tests.support.fake_openai` in its own process, with a hook that prints the
moment its last chunk went out). It watches the screen with `tmux
capture-pane` and the app's CPU time in /proc/PID/stat.

  stream   a reply of 500 / 2,000 / 8,000 tokens (the first word `alpha`, the
           last `omega`; "first word" is the first reply text seen), sent at full speed and paced
           at 50 tokens/s. Reported from Enter: the server's last chunk, the
           first and last word on screen, the app idle (its CPU time stops
           growing: under 20 ms in the following second), and the app's CPU
           seconds until then. Keystrokes (`Z`) are typed into the prompt while
           the reply streams (as soon as the first word shows, then every
           second) and right after the last word shows; "echo" is the time
           until the letter is on screen.
               targets: last word <= 0.5 s after the server's last chunk,
               idle <= 1 s after the last word (2,000 and 8,000 tokens),
               echo < 100 ms
           The reply is shaped like a model's (--shape markdown, the default):
           headings, prose, lists, code blocks and tables; --shape plain sends
           one long paragraph instead.
  startup  `newt` with 1,000 stored conversations (100 turns each): time from
           launching it until the prompt is drawn and until a typed key echoes,
           and the app's CPU seconds by then (on a loaded machine the wall
           times grow with the load, the CPU seconds much less).
               target <= 0.5 s
The machine's load average is printed with each table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COLS, ROWS = 120, 40
FIRST, LAST, KEY = "alpha", "omega", "Z"
WORDS = ("one ", "two ", "six ", "ten ", "red ", "sky ", "sea ", "map ")
PROMPT_HINT = "Enter sends"
QUIET_WINDOW = 1.0  # seconds without CPU growth that count as idle
QUIET_CPU = 0.02  # CPU seconds tolerated in that window (the cursor blinks)
CLK_TCK = os.sysconf("SC_CLK_TCK")


# -- the reply texts ---------------------------------------------------------------------


def plain_reply(tokens: int) -> str:
    """One long paragraph of four-character words (chars/4 = tokens)."""
    middle = "".join(WORDS[i % len(WORDS)] for i in range(max(0, tokens - 2)))
    return f"{FIRST} {middle}{LAST}"


def markdown_reply(tokens: int) -> str:
    """A reply shaped like a model's: headings, prose, lists, code and tables."""
    parts: list[str] = [f"{FIRST} starts the answer.\n\n"]
    section = 0
    while sum(map(len, parts)) < tokens * 4 - 200:
        section += 1
        words = "".join(WORDS[(section + i) % len(WORDS)] for i in range(60))
        parts.append(f"## Part {section}\n\n{words.strip()}.\n\n")
        parts.append("".join(f"- item {section}.{i}: {words[: 24 + i]}\n" for i in range(4)))
        parts.append("\n```python\n")
        parts.append("".join(f"def f{section}_{i}(x):\n    return x * {i}\n" for i in range(6)))
        parts.append("```\n\n| name | value | note |\n|---|---:|---|\n")
        parts.append("".join(f"| row {i} | {section * i} | {words[:16]} |\n" for i in range(5)))
        parts.append("\n")
    parts.append(f"The end, {LAST}")
    return "".join(parts)


# -- installing the real command -----------------------------------------------------------


def _wheel_is_complete(wheel: Path) -> bool:
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = {str(p.relative_to(ROOT)) for p in (ROOT / "newt").rglob("*.py")}
    return sources <= names


def install(workdir: Path) -> Path:
    """Build the wheel and install it into a fresh venv; returns the `newt` path."""
    venv = workdir / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    wheels = workdir / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", ".", "-w", str(wheels)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    wheel = next(wheels.glob("newt-*.whl"))
    if not _wheel_is_complete(wheel):
        sys.exit(f"{wheel.name} lacks some of newt's modules: check the package list")
    subprocess.run([*pip, str(wheel)], check=True, capture_output=True)
    return venv / "bin" / "newt"


# -- the fake server, with the moment of its last chunk -----------------------------------


def serve(argv: list[str]) -> None:
    """Run tests.support.fake_openai, printing `sent <monotonic>` when a stream has ended."""
    from tests.support import fake_openai

    original = fake_openai._Handler._stream

    def timed(self: fake_openai._Handler, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        print(f"sent {time.monotonic():.6f}", flush=True)

    fake_openai._Handler._stream = timed  # type: ignore[method-assign]
    fake_openai.main(argv)


class Server:
    def __init__(self, reply: str, delay: float) -> None:
        self.reply_file = Path(tempfile.mkstemp(suffix=".txt")[1])
        self.reply_file.write_text(reply)
        script = [{"type": "reply", "text": reply, "chunk_size": 4, "delay_s": delay}]
        self.script_file = self.reply_file.with_suffix(".json")
        import json

        self.script_file.write_text(json.dumps(script * 20))
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--port", "0", "--script", str(self.script_file)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.base_url = line.split("listening on", 1)[1].strip()
        self.sent: list[float] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("sent "):
                self.sent.append(float(line.split()[1]))

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.reply_file.unlink(missing_ok=True)
        self.script_file.unlink(missing_ok=True)


# -- the terminal ----------------------------------------------------------------------------


class Terminal:
    """One tmux server of our own (its own socket), one 120x40 window running newt."""

    def __init__(self, newt: Path, home: Path, base_url: str) -> None:
        self.socket = f"newt-bench-{uuid.uuid4().hex[:8]}"
        self.newt, self.home, self.base_url = newt, home, base_url
        self.pid = 0

    def tmux(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False
        )
        return out.stdout

    def start(self) -> float:
        env = {"NEWT_HOME": str(self.home), "TERM": "tmux-256color", "COLORTERM": "truecolor"}
        command = f"exec {self.newt} --base-url {self.base_url} --model fake-model"
        env_args = [arg for k, v in env.items() for arg in ("-e", f"{k}={v}")]
        t0 = time.monotonic()
        subprocess.run(
            [
                *("tmux", "-L", self.socket, "-f", "/dev/null", "new-session", "-d"),
                *("-s", "bench", "-x", str(COLS), "-y", str(ROWS), *env_args, command),
            ],
            check=True,
        )
        self.pid = int(self.tmux("display-message", "-p", "-t", "bench", "#{pane_pid}").strip())
        return t0

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "bench")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "bench", *keys)

    def cpu(self) -> float:
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def close(self) -> None:
        socket = self.tmux("display-message", "-p", "#{socket_path}").strip()
        self.tmux("kill-server")
        if socket:
            Path(socket).unlink(missing_ok=True)  # kill-server leaves the socket file

    def wait_for(self, text: str, timeout: float = 30.0) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.screen():
                return time.monotonic()
            time.sleep(0.002)
        raise TimeoutError(f"{text!r} never showed; screen:\n{self.screen()}")


# -- one streamed reply ----------------------------------------------------------------------


@dataclass
class StreamRun:
    server_done: float = float("nan")
    first_word: float = float("nan")
    last_word: float = float("nan")
    idle: float = float("nan")
    cpu: float = float("nan")
    echo_during: list[float] = field(default_factory=list)
    echo_after: list[float] = field(default_factory=list)


def stream_once(newt: Path, tokens: int, delay: float, shape: str, timeout: float) -> StreamRun:
    reply = (markdown_reply if shape == "markdown" else plain_reply)(tokens)
    run = StreamRun()
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(reply, delay)
        term = Terminal(newt, Path(tmp), server.base_url)
        try:
            term.start()
            term.wait_for(PROMPT_HINT)
            term.keys("-l", "go")
            term.wait_for("go")
            time.sleep(0.5)  # let startup work settle
            base_keys = term.screen().count(KEY)
            cpu0 = term.cpu()
            t0 = time.monotonic()
            term.keys("Enter")
            keys_typed = 0
            last_key = 0.0
            key_sent: float | None = None
            key_is_after = False
            samples: list[tuple[float, float]] = []
            while True:
                now = time.monotonic()
                if now - t0 > timeout:
                    raise TimeoutError(f"no idle after {timeout} s; screen:\n{term.screen()}")
                screen = term.screen()
                now = time.monotonic()
                samples.append((now, term.cpu()))
                if key_sent is not None and screen.count(KEY) >= base_keys + keys_typed:
                    (run.echo_after if key_is_after else run.echo_during).append(now - key_sent)
                    key_sent = None
                if run.first_word != run.first_word and (FIRST in screen or "six ten" in screen):
                    run.first_word = now - t0
                if run.last_word != run.last_word and LAST in screen:
                    run.last_word = now - t0
                if key_sent is None:
                    streaming = run.first_word == run.first_word and run.last_word != run.last_word
                    due_during = streaming and now - last_key >= 1.0
                    due_after = run.last_word == run.last_word and len(run.echo_after) < 1
                    if due_during or due_after:
                        term.keys("-l", KEY)
                        keys_typed += 1
                        key_sent = last_key = time.monotonic()
                        key_is_after = not due_during
                if run.last_word == run.last_word and key_sent is None and run.echo_after:
                    idle_at = _idle_since(samples)
                    if idle_at is not None:
                        run.idle = idle_at[0] - t0
                        run.cpu = idle_at[1] - cpu0
                        break
                time.sleep(0.002)
            if server.sent:
                run.server_done = server.sent[-1] - t0
        finally:
            term.close()
            server.close()
    return run


def _idle_since(samples: list[tuple[float, float]]) -> tuple[float, float] | None:
    """(time, cpu) of the last sample before a quiet window that has now elapsed."""
    end_t, end_cpu = samples[-1]
    if len(samples) < 2 or end_t - samples[0][0] < QUIET_WINDOW:
        return None
    # the sample at which the quiet window ending now began
    i = len(samples) - 1
    while i > 0 and end_t - samples[i - 1][0] <= QUIET_WINDOW:
        i -= 1
    if end_cpu - samples[i][1] > QUIET_CPU:
        return None
    # walk back to the last moment the CPU time was still growing
    j = i
    while j > 0 and samples[j - 1][1] >= samples[i][1] - 1e-9:
        j -= 1
    return samples[j]


# -- startup ---------------------------------------------------------------------------------


def startup_once(newt: Path, home: Path, base_url: str) -> tuple[float, float, float]:
    """Seconds to the prompt drawn and to a typed key echoed; the app's CPU seconds then."""
    term = Terminal(newt, home, base_url)
    try:
        t0 = term.start()
        drawn = term.wait_for(PROMPT_HINT) - t0
        term.keys("-l", KEY)
        echoed = term.wait_for(KEY) - t0
        return drawn, echoed, term.cpu()
    finally:
        term.close()


def seed_home(home: Path) -> None:
    from benchmarks.ui_bench import seed

    seed(home / "newt.db", 1000, 100)


# -- report ----------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    return "  -  " if x != x else f"{x:5.2f}"


def _ms(xs: list[float]) -> str:
    if not xs:
        return "-"
    return f"{statistics.median(xs) * 1000:.0f}/{max(xs) * 1000:.0f} ms (n={len(xs)})"


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--newt", type=Path, help="an installed newt (default: build + install)")
    parser.add_argument("--only", choices=("stream", "startup"))
    parser.add_argument("--sizes", default="500,2000,8000")
    parser.add_argument("--paces", default="full,50", help="full and/or tokens per second")
    parser.add_argument("--shape", choices=("plain", "markdown"), default="markdown")
    parser.add_argument("--runs", type=int, default=1, help="streamed replies per size and pace")
    parser.add_argument(
        "--startup-runs", type=int, default=5, help="launches for the startup median (default 5)"
    )
    parser.add_argument("--timeout", type=float, default=400.0)
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        sys.exit("needs tmux")
    with tempfile.TemporaryDirectory(prefix="newt-term-bench-") as tmp:
        newt = args.newt or install(Path(tmp))
        if args.only in (None, "stream"):
            print(
                f"stream ({args.shape}; seconds from Enter; keystroke echo median/max;"
                f" load average {os.getloadavg()[0]:.1f})\n"
                "tokens pace   | server done | first word | last word | +after server"
                " | idle  | +after last | CPU s | echo during med/max | echo after | load"
            )
            for pace in args.paces.split(","):
                delay = 0.0 if pace == "full" else 1 / float(pace)
                for size in (int(s) for s in args.sizes.split(",")):
                    runs = [
                        stream_once(newt, size, delay, args.shape, args.timeout)
                        for _ in range(args.runs)
                    ]

                    def med(name: str, runs: list[StreamRun] = runs) -> float:
                        return statistics.median(getattr(r, name) for r in runs)

                    during = [x for r in runs for x in r.echo_during]
                    after = [x for r in runs for x in r.echo_after]
                    label = "full" if pace == "full" else f"{pace}/s"
                    print(
                        f"{size:6d} {label:6s} |    {_fmt(med('server_done'))}    |"
                        f"   {_fmt(med('first_word'))}    |   {_fmt(med('last_word'))}   |"
                        f"    {_fmt(med('last_word') - med('server_done'))}     |"
                        f" {_fmt(med('idle'))} |    {_fmt(med('idle') - med('last_word'))}    |"
                        f" {_fmt(med('cpu'))} | {_ms(during):19s} | {_ms(after)}"
                        f" | {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
        if args.only in (None, "startup"):
            home = Path(tmp) / "home"
            home.mkdir()
            seed_home(home)
            server = Server(plain_reply(10), 0.0)
            load_before = os.getloadavg()[0]
            try:
                startup_once(newt, home, server.base_url)  # warm the page cache
                times = [
                    startup_once(newt, home, server.base_url) for _ in range(args.startup_runs)
                ]
            finally:
                server.close()
            drawn = statistics.median(t[0] for t in times)
            echoed = statistics.median(t[1] for t in times)
            cpu = statistics.median(t[2] for t in times)
            print(
                f"startup with 1,000 conversations (median of {len(times)}): prompt drawn"
                f" {drawn:.2f} s, first key echoed {echoed:.2f} s (app CPU {cpu:.2f} s by then;"
                f" load average {load_before:.1f} -> {os.getloadavg()[0]:.1f})"
            )


if __name__ == "__main__":
    main()
