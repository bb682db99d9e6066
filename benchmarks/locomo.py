"""LoCoMo: are the turns that answer a question in the request newt sends?

    python benchmarks/locomo.py [--data DIR] [--windows 2048,8192] [--quick]
        [--conversations conv-41,conv-42] [--set recall.KEY=VALUE ...]
        [--tune engine.ATTR=VALUE ...] [--json-out FILE]

LoCoMo (Maharana et al., ACL 2024) holds long two-person conversations over
19-32 sessions, each with question/answer items naming the turns that answer
them (`evidence`). The development conversations live in
`../shared/data/locomo-dev/` (five of the release's ten, research use with
attribution; the other five are the project's holdout and are never read
here). Without the data this says where the public release is.

Model-independent: every exchange of a conversation (two consecutive turns,
"Speaker: text"; a shared photo's caption appended) is played through newt's
real turn path (ChatSession.send, real SQLite, the real HTTP client) against
the repo's fake OpenAI-compatible server, which answers each turn with the
next speaker's words; the store's clock is set to each session's date, so
every turn carries the day it was said. Then each question of categories 1-4
(5 has no answer) is asked on a copy of that database, and what is judged is
the request the server receives: is the text of every evidence turn in it
("all"), of at least one ("any").

Beside newt, in the same run and from the same turns:
  no memory  the newest exchanges that fit the window less the reply reserve
  bm25       FTS5 bm25 (porter unicode61) over the exchanges (one document
             each), the question's words OR-ed, best first while they fit
             the evidence budget newt had for that question (its block as
             rendered must fit the same budget); no recent turns at all

`--cli`: the same through the real command line: every exchange is played,
and every question asked, by its own `newt -c -p` process (libfaketime's
`faketime` sets each process's clock to the day the turn was said; Debian's
package `faketime`), so print mode's own recall is what is judged.

`--quick`: one conversation (conv-41), its first 8 sessions, the questions
whose evidence lies there. `--set` changes newt's config ([recall] and
[memory] keys);
`--tune` sets a recall tunable (recall.tuning.RecallTuning, e.g.
neighbour_share=0.8), for experiments; `--played DIR` keeps the played
databases there and reuses them, so experiments on what happens at question
time skip the playing. `--probes`: after each conversation's questions, the
50 unrelated messages of unrelated_probes.py are asked the same way; the
table says how many requests carried a capsule. docs/benchmarks.md keeps the
current table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.memory_answers import summary_writers  # noqa: E402
from benchmarks.unrelated_probes import PROBES  # noqa: E402
from newt.agent.session.chat_session import ChatSession  # noqa: E402
from newt.agent.turn.model_facts import REPLY_RESERVE_MAX  # noqa: E402
from newt.cli.detached_writers import VECTORS_FLAG  # noqa: E402
from newt.config import Config  # noqa: E402
from newt.recall.time_anchor import without_anchors  # noqa: E402
from newt.store import Store  # noqa: E402
from tests.support.fake_openai import FakeOpenAI, Reply  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo-dev"
PUBLIC = "https://github.com/snap-research/locomo (data/locomo10.json)"
CATEGORIES = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain"}
QUICK = ("conv-41", 8)
SESSION_GAP_S = 30.0  # between two turns of one session
SUMMARY_REPLY = "A short summary of the earlier conversation."


@dataclass
class Exchange:
    user: str
    reply: str
    at: float


@dataclass
class Question:
    text: str
    answer: str
    evidence: list[str]
    category: int


@dataclass
class Dialogue:
    name: str
    exchanges: list[Exchange]
    questions: list[Question]
    texts: dict[str, str]  # dia_id -> the message as played
    asked_at: float


def rendered(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def session_time(stamp: str) -> float:
    return datetime.strptime(stamp, "%I:%M %p on %d %B, %Y").timestamp()


def load(path: Path, max_sessions: int | None = None) -> Dialogue:
    data = json.loads(path.read_text(encoding="utf-8"))
    conv = data.get("conversation", data)
    numbers = sorted(
        int(k.split("_")[1])
        for k in conv
        if re.fullmatch(r"session_\d+", k) and isinstance(conv[k], list) and conv[k]
    )
    if max_sessions is not None:
        numbers = numbers[:max_sessions]
    exchanges: list[Exchange] = []
    texts: dict[str, str] = {}
    last = 0.0
    for n in numbers:
        start = session_time(conv[f"session_{n}_date_time"])
        turns = conv[f"session_{n}"]
        for turn in turns:
            texts[turn["dia_id"]] = rendered(turn)
        for i in range(0, len(turns), 2):
            user = rendered(turns[i])
            reply = rendered(turns[i + 1]) if i + 1 < len(turns) else ""
            exchanges.append(Exchange(user, reply, start + i * SESSION_GAP_S))
        last = start + len(turns) * SESSION_GAP_S
    questions = [
        Question(q["question"], str(q.get("answer", "")), list(q["evidence"]), q["category"])
        for q in data["qa"]
        if q["category"] in CATEGORIES and q["evidence"] and all(e in texts for e in q["evidence"])
    ]
    return Dialogue(path.stem, exchanges, questions, texts, last + 86400.0)


# ----------------------------------------------------------------- newt


def make_config(home: Path, base_url: str, window: int, values: Sequence[str]) -> Config:
    config = Config(path=home / "config.toml", db_path=home / "newt.db")
    config.backend.base_url = base_url
    config.backend.model = "fake-model"
    config.memory.context_tokens = window
    for item in values:
        dotted, _, raw = item.partition("=")
        section, _, key = dotted.partition(".")
        target = getattr(config, section)
        current = getattr(target, key)
        value: Any = type(current)(raw) if not isinstance(current, bool) else raw == "true"
        setattr(target, key, value)
    return config


def tune(session: ChatSession, values: Sequence[str]) -> None:
    changes = {}
    for item in values:
        name, _, raw = item.partition("=")
        changes[name.removeprefix("engine.")] = raw
    session.recall.tuning = session.recall.tuning.with_values(changes)


def last_user_text(request: dict[str, Any]) -> str:
    for message in reversed(request.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


class Scripted:
    """The fake server's answers: the next speaker's words for the turn in flight."""

    def __init__(self) -> None:
        self.expect = ""
        self.reply = ""
        self.seen: dict[str, Any] | None = None

    def __call__(self, request: dict[str, Any]) -> Reply:
        if self.expect and last_user_text(request).endswith(self.expect):
            self.seen = request
            return Reply(text=self.reply, chunk_size=4096)
        return Reply(text=SUMMARY_REPLY, chunk_size=4096)


def fixed_clock(at: float) -> Callable[[], float]:
    """A clock that always says `at` (each played turn is said at its own time)."""
    return lambda: at


async def send(session: ChatSession, text: str) -> None:
    async for _ in session.turns.send(text):
        pass


async def play(
    dialogue: Dialogue, home: Path, window: int, fake: FakeOpenAI, args: argparse.Namespace
) -> None:
    config = make_config(home, fake.base_url, window, args.set)
    scripted = Scripted()
    fake.responder = scripted
    async with await Store.open(config.db_path) as store:
        session = await ChatSession.open(config, store, probe=False)
        tune(session, args.tune)
        try:
            for ex in dialogue.exchanges:
                store.db.clock = fixed_clock(ex.at)
                scripted.expect, scripted.reply = ex.user, ex.reply
                await send(session, ex.user)
            queue = session.recall_parts.queue
            if queue is not None:
                await queue.wait_idle(1800)
        finally:
            await session.close()


@dataclass
class Outcome:
    category: int
    found: dict[str, list[bool]] = field(default_factory=dict)  # line -> per evidence
    tokens: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def request_text(request: dict[str, Any]) -> str:
    parts = []
    for message in request.get("messages") or []:
        content = message.get("content")
        parts.append(content if isinstance(content, str) else json.dumps(content))
    # a recalled line's relative times carry their day in brackets: the line is still the turn
    return norm(without_anchors("\n".join(parts)))


def norm(text: str) -> str:
    return " ".join(text.split())


async def ask(
    dialogue: Dialogue,
    snapshot: Path,
    work: Path,
    window: int,
    fake: FakeOpenAI,
    question: Question,
    args: argparse.Namespace,
) -> Asked:
    """The request newt sent for `question`, the seconds it took, and the
    evidence newt packed for it (its budget is what the bm25 line gets)."""
    fresh_copy(snapshot, work)
    config = make_config(work, fake.base_url, window, args.set)
    scripted = Scripted()
    scripted.expect, scripted.reply = question.text, "ok"
    fake.responder = scripted
    started = time.perf_counter()
    async with await Store.open(config.db_path) as store:
        store.db.clock = lambda: dialogue.asked_at
        session = await ChatSession.open(config, store, probe=False)
        tune(session, args.tune)
        try:
            await session.conversations.continue_latest()
            await send(session, question.text)
            report = session.last_retention
        finally:
            await session.close()
    return Asked(
        scripted.seen,
        time.perf_counter() - started,
        report.budget_tokens if report is not None else 0,
        len(report.capsules) if report is not None else 0,
        report.retained_tokens if report is not None else 0,
    )


@dataclass
class Asked:
    request: dict[str, Any] | None
    seconds: float
    budget: int
    capsules: int
    evidence_tokens: int


# ------------------------------------------------------------ the real CLI


class ByText:
    """The fake server's answers for separate processes: the next speaker's
    words for whichever turn a request carries (a summary request gets the
    summary); a question's request is kept."""

    def __init__(self, dialogue: Dialogue) -> None:
        self.replies = {ex.user: ex.reply for ex in dialogue.exchanges}
        self.question = ""
        self.seen: dict[str, Any] | None = None

    def __call__(self, request: dict[str, Any]) -> Reply:
        last = last_user_text(request)
        own = last.rsplit("\n\n", 1)[-1]  # after the evidence block, if any
        if self.question and own == self.question:
            self.seen = request
            return Reply(text="ok", chunk_size=4096)
        reply = self.replies.get(own, self.replies.get(last))
        return Reply(text=reply if reply is not None else SUMMARY_REPLY, chunk_size=4096)


def newt_at(
    at: float, home: Path, fake: FakeOpenAI, *argv: str
) -> subprocess.CompletedProcess[str]:
    """`newt ARGV` as a script runs it, its clock set to `at` (libfaketime:
    every turn keeps the day it was said, as the in-process path's store clock
    does)."""
    stamp = datetime.fromtimestamp(at).strftime("@%Y-%m-%d %H:%M:%S")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "NEWT_CONFIG"))}
    env["NEWT_HOME"] = str(home)
    cmd = ["faketime", "-f", stamp, sys.executable, "-m", "newt"]
    cmd += ["--base-url", fake.base_url, "--model", "fake-model", *argv]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)


def cli_config(home: Path, window: int, values: Sequence[str]) -> None:
    lines = ["[memory]", f"context_tokens = {window}"]
    memory = [item.partition("=") for item in values if item.startswith("memory.")]
    lines += [f"{k.removeprefix('memory.')} = {json.dumps(_typed(v))}" for k, _, v in memory]
    recall = [item.partition("=") for item in values if item.startswith("recall.")]
    if recall:
        lines.append("[recall]")
        lines += [f"{k.removeprefix('recall.')} = {json.dumps(_typed(v))}" for k, _, v in recall]
    (home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _typed(raw: str) -> Any:
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw


async def play_cli(
    dialogue: Dialogue, home: Path, window: int, fake: FakeOpenAI, args: argparse.Namespace
) -> None:
    """Every exchange through its own `newt -c -p` process."""
    cli_config(home, window, args.set)
    fake.responder = ByText(dialogue)
    for n, ex in enumerate(dialogue.exchanges):
        more = ["-c"] if n else []
        done = await asyncio.to_thread(newt_at, ex.at, home, fake, *more, "-p", ex.user)
        # a turn the next speaker did not answer (a session ending on it) is one the
        # model gave no answer to: newt says so and exits 1, keeping the words
        if done.returncode != 0 and not (ex.reply == "" and "no answer" in done.stderr):
            raise RuntimeError(f"newt -p failed on exchange {n}: {done.stderr}")


async def ask_cli(
    dialogue: Dialogue,
    snapshot: Path,
    work: Path,
    window: int,
    fake: FakeOpenAI,
    question: Question,
    args: argparse.Namespace,
) -> Asked:
    """`ask`, through a `newt -c -p --json` process on a copy of the database."""
    fresh_copy(snapshot, work)
    cli_config(work, window, args.set)
    responder = ByText(dialogue)
    responder.question = question.text
    fake.responder = responder
    started = time.perf_counter()
    done = await asyncio.to_thread(
        newt_at, dialogue.asked_at, work, fake, "-c", "-p", question.text, "--json"
    )
    seconds = time.perf_counter() - started
    report = (json.loads(done.stdout) if done.returncode == 0 else {}).get("retained_evidence")
    report = report or {}
    return Asked(
        responder.seen,
        seconds,
        int(report.get("budget_tokens", 0)),
        len(report.get("capsules", [])),
        int(report.get("retained_tokens", 0)),
    )


def fresh_copy(snapshot: Path, work: Path) -> None:
    """`work` emptied, holding a copy of the played database (a question
    must not see the last one's turn, nor a detached writer it started)."""
    stop_writers(work)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    shutil.copyfile(snapshot, work / "newt.db")


def stop_writers(home: Path) -> None:
    """Kill the detached newt writers (`--finish-summary`, `--catch-up-vectors`)
    a question's `newt -c -p` left working on `home`, and wait until they end."""
    pids = summary_writers(home, ("--finish-summary", VECTORS_FLAG))
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


# ------------------------------------------------------------- baselines


def tokens(text: str) -> int:
    return -(-len(text) // 4)


def room(window: int) -> int:
    return window - min(REPLY_RESERVE_MAX, window // 4)


def no_memory(dialogue: Dialogue, window: int, question: Question) -> list[str]:
    left = room(window) - tokens(question.text)
    kept: list[str] = []
    for ex in reversed(dialogue.exchanges):
        cost = tokens(ex.user) + tokens(ex.reply) + 8
        if cost > left:
            break
        left -= cost
        kept += [ex.user, ex.reply]
    return kept


class Bm25:
    """FTS5 bm25 over the exchanges, one document each."""

    def __init__(self, dialogue: Dialogue) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE x USING fts5(body, tokenize='porter unicode61')")
        self.docs = [f"{ex.user}\n{ex.reply}" for ex in dialogue.exchanges]
        self.db.executemany("INSERT INTO x(rowid, body) VALUES (?, ?)", enumerate(self.docs))

    def search(self, question: str, budget: int) -> list[str]:
        words = {w.lower() for w in re.findall(r"[^\W_]+", question)}
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in sorted(words))
        rows = self.db.execute(
            "SELECT rowid FROM x WHERE x MATCH ? ORDER BY bm25(x)", (match,)
        ).fetchall()
        kept: list[str] = []
        left = budget
        for (rowid,) in rows:
            cost = tokens(self.docs[rowid]) + 4
            if cost > left:
                break
            left -= cost
            kept.append(self.docs[rowid])
        return kept


# --------------------------------------------------------------- report


def pct(hits: int, total: int) -> str:
    return f"{100.0 * hits / total:.1f}%" if total else "-"


def table(window: int, outcomes: list[Outcome], budget: int) -> list[str]:
    lines = [
        f"window {window} (evidence budget {budget} tokens), {len(outcomes)} questions",
        "",
        "| all evidence in the request | "
        + " | ".join(CATEGORIES.values())
        + " | all | any evidence | median request tokens | s/question |",
        "|---|" + "---|" * (len(CATEGORIES) + 4),
    ]
    for line in ("newt", "no memory", "bm25"):
        cells = []
        for cat in CATEGORIES:
            mine = [o for o in outcomes if o.category == cat]
            cells.append(pct(sum(all(o.found[line]) for o in mine), len(mine)))
        every = pct(sum(all(o.found[line]) for o in outcomes), len(outcomes))
        some = pct(sum(any(o.found[line]) for o in outcomes), len(outcomes))
        median = statistics.median(o.tokens[line] for o in outcomes) if outcomes else 0
        secs = (
            f"{statistics.mean(o.seconds for o in outcomes):.2f}"
            if line == "newt" and outcomes
            else "-"
        )
        lines.append(f"| {line} | " + " | ".join(cells) + f" | **{every}** | {some} | "
                     f"{median:.0f} | {secs} |")  # fmt: skip
    return lines


async def run_window(
    dialogues: list[Dialogue], window: int, args: argparse.Namespace, tmp: Path
) -> tuple[list[Outcome], list[dict[str, Any]], Window]:
    outcomes: list[Outcome] = []
    budgets: list[int] = []
    evidence_tokens: list[int] = []
    probes: list[Asked] = []
    rows: list[dict[str, Any]] = []
    with FakeOpenAI(n_ctx=window) as fake:
        for dialogue in dialogues:
            home = (Path(args.played) if args.played else tmp) / f"{dialogue.name}-{window}"
            if not (args.played and (home / "played").exists()):
                if home.exists():
                    shutil.rmtree(home)
                home.mkdir(parents=True)
                started = time.perf_counter()
                await (play_cli if args.cli else play)(dialogue, home, window, fake, args)
                (home / "played").write_text("ok")
                played = time.perf_counter() - started
                print(f"  {dialogue.name} @ {window}: played {len(dialogue.exchanges)} exchanges"
                      f" in {played:.0f} s", file=sys.stderr, flush=True)  # fmt: skip
            bm25 = Bm25(dialogue)
            for question in dialogue.questions:
                asked = await (ask_cli if args.cli else ask)(
                    dialogue, home / "newt.db", tmp / "q", window, fake, question, args
                )
                request, seconds, budget = asked.request, asked.seconds, asked.budget
                budgets.append(budget)
                evidence_tokens.append(asked.evidence_tokens)
                sent = request_text(request) if request else ""
                evidence = [norm(dialogue.texts[e]) for e in question.evidence]
                plain = norm("\n".join(no_memory(dialogue, window, question)))
                found_bm25 = bm25.search(question.text, budget)
                searched = norm("\n".join(found_bm25))
                outcome = Outcome(question.category, seconds=seconds)
                outcome.found = {
                    "newt": [e in sent for e in evidence],
                    "no memory": [e in plain for e in evidence],
                    "bm25": [e in searched for e in evidence],
                }
                outcome.tokens = {
                    "newt": tokens(sent),
                    "no memory": tokens(plain),
                    "bm25": tokens(searched) + tokens(question.text),
                }
                outcomes.append(outcome)
                rows.append(
                    {
                        "conversation": dialogue.name,
                        "window": window,
                        "question": question.text,
                        "answer": question.answer,
                        "category": question.category,
                        "evidence": question.evidence,
                        "found": outcome.found,
                        "tokens": outcome.tokens,
                        "evidence_tokens": asked.evidence_tokens,
                    }
                )
            if args.probes:
                for text in PROBES:
                    probe = Question(text, "", [], 0)
                    asking = ask_cli if args.cli else ask
                    asked = await asking(
                        dialogue, home / "newt.db", tmp / "q", window, fake, probe, args
                    )
                    probes.append(asked)
                    rows.append(
                        {
                            "conversation": dialogue.name,
                            "window": window,
                            "probe": text,
                            "capsules": asked.capsules,
                            "evidence_tokens": asked.evidence_tokens,
                        }
                    )
    stats = Window(
        int(statistics.median(budgets)) if budgets else 0,
        int(statistics.median(evidence_tokens)) if evidence_tokens else 0,
        probes,
    )
    return outcomes, rows, stats


@dataclass
class Window:
    budget: int  # median evidence budget of the questions
    evidence_tokens: int  # median evidence tokens in a question's request
    probes: list[Asked]


def probe_lines(window: int, stats: Window) -> list[str]:
    if not stats.probes:
        return []
    carried = sum(p.capsules > 0 for p in stats.probes)
    tokens = statistics.median(p.evidence_tokens for p in stats.probes)
    return [
        f"unrelated probes @ {window}: {len(stats.probes) - carried} of {len(stats.probes)}"
        f" requests carried no capsule ({pct(len(stats.probes) - carried, len(stats.probes))});"
        f" median evidence tokens per request: probes {tokens:.0f},"
        f" LoCoMo questions {stats.evidence_tokens}",
        "",
    ]


async def main_async(args: argparse.Namespace) -> int:
    data = Path(args.data)
    if not data.is_dir():
        print(f"no LoCoMo data at {data}: the public release is at {PUBLIC}; pass --data DIR",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.quick:
        dialogues = [load(data / f"{QUICK[0]}.json", QUICK[1])]
    else:
        names = args.conversations.split(",") if args.conversations else None
        paths = sorted(data.glob("conv-*.json"))
        dialogues = [load(p) for p in paths if names is None or p.stem in names]
    windows = [int(w) for w in args.windows.split(",")]
    all_rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="newt-locomo-") as tmp:
        for window in windows:
            outcomes, rows, stats = await run_window(dialogues, window, args, Path(tmp))
            all_rows += rows
            lines = [*table(window, outcomes, stats.budget), "", *probe_lines(window, stats)]
            print("\n".join(lines), flush=True)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(all_rows, indent=1), encoding="utf-8")
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--windows", default="2048,8192")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--conversations", default="")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument("--tune", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--probes", action="store_true", help="ask the unrelated probes too")
    parser.add_argument(
        "--cli",
        action="store_true",
        help="play and ask through real `newt -c -p` processes (needs faketime)",
    )
    parser.add_argument("--json-out", default="")
    parser.add_argument(
        "--played",
        default="",
        metavar="DIR",
        help="keep each played conversation's database in DIR and reuse it on the next run"
        " (only what is asked changes: the question-time tunables)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    return asyncio.run(main_async(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
