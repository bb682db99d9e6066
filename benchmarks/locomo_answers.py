"""LoCoMo answered by a model that reads: does newt's memory turn into answers?

    python benchmarks/locomo_answers.py [--per-category 10] [--seed 7] [--window 2048]
        [--played DIR] [--model GGUF] [--json-out FILE]

A fixed, seeded sample of development questions (`--per-category` of each of
the four categories, drawn with `--seed` from all five conversations), each
conversation played as benchmarks/locomo.py plays it (the real turn path
against the fake server; `--played DIR` reuses its databases), then every
question answered by Qwen2.5-Coder-1.5B-Instruct (the catalogue's
qwen2.5-coder-1.5b, from ~/.cache/newt-llama; scripts/get_llama_server.sh
puts it there) on the real llama-server at temperature 0, three ways:

  newt       the question sent through ChatSession on a copy of the played
             database: the recent turns and the evidence block newt packs,
             tools offered as newt decides for the model (its probe, asked
             once here: each question's copy of the database would ask again)
  bm25       FTS5 bm25 over the exchanges in the evidence budget newt had,
             then the question (no recent turns)
  no memory  the newest exchanges that fit the window, then the question
  evidence alone
             only the question's gold evidence turns, then the question:
             the model's own ceiling on these questions

Scored as LoCoMo scores answers: F1 of the normalised tokens of the reply
against the gold answer (lower case, no punctuation, no articles), and
whether the reply holds the normalised gold answer; a date counts either way
round ("September 3, 2022" is held by "Saturday 3 September 2022"). Seconds per question
are the model's, per line. No target: the point is to see whether
the evidence in the request turns into answers. docs/benchmarks.md keeps the
current table.
"""

from __future__ import annotations

import argparse
import asyncio
import calendar
import itertools
import json
import random
import re
import statistics
import string
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.locomo import (  # noqa: E402
    CATEGORIES,
    DEFAULT_DATA,
    Bm25,
    Dialogue,
    Question,
    fresh_copy,
    load,
    make_config,
    no_memory,
    play,
)
from newt.agent import events as ev  # noqa: E402
from newt.agent.local.managed_server import PROMPT_BATCH_TOKENS  # noqa: E402
from newt.agent.session.chat_session import ChatSession  # noqa: E402
from newt.agent.session.settings import effective_system_prompt  # noqa: E402
from newt.agent.tools.probe import probe_tool_calls  # noqa: E402
from newt.backend.client import ChatClient  # noqa: E402
from newt.chat_settings import ChatSettings  # noqa: E402
from newt.local.chat_template import template_args  # noqa: E402
from newt.local.server import LocalLlamaServer, cache_dir  # noqa: E402
from newt.store import Store  # noqa: E402
from tests.support.fake_openai import FakeOpenAI  # noqa: E402
from tests.support.llama_server import obtain_chat_model, obtain_llama_server  # noqa: E402

REPLY_TOKENS = 96
LINES = ("newt", "bm25", "no memory", "evidence alone")
BASELINE_SYSTEM = (
    "You answer questions about a conversation between two people, using the"
    " excerpts given. Answer briefly."
)


MONTH_FIRST = re.compile(
    r"\b(" + "|".join(calendar.month_name[1:]) + r")\s+(\d{1,2})(?:st|nd|rd|th)?\s*,?\s+(\d{4})\b",
    re.I,
)


def day_first(text: str) -> str:
    """Each date written month first ("June 11, 2023") written day first
    ("11 June 2023"): one date either way round is one answer, and newt's
    lines write their days day first."""
    return MONTH_FIRST.sub(lambda m: f"{int(m.group(2))} {m.group(1)} {m.group(3)}", text)


def normalise(text: str) -> list[str]:
    """LoCoMo's answer normalisation (lower case, no punctuation, no
    articles), with every date written day first."""
    text = day_first(text).lower().replace(",", " ")
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the|and)\b", " ", text)
    return text.split()


def f1(reply: str, gold: str) -> float:
    got, want = normalise(reply), normalise(gold)
    common = sum((Counter(got) & Counter(want)).values())
    if not got or not want or common == 0:
        return 0.0
    precision, recall = common / len(got), common / len(want)
    return 2 * precision * recall / (precision + recall)


def holds_gold(reply: str, gold: str) -> bool:
    want = " ".join(normalise(gold))
    return bool(want) and want in " ".join(normalise(reply))


def sample(
    dialogues: list[Dialogue], per_category: int, seed: int
) -> list[tuple[Dialogue, Question]]:
    rng = random.Random(seed)
    picked: list[tuple[Dialogue, Question]] = []
    for category in CATEGORIES:
        pool = [(d, q) for d in dialogues for q in d.questions if q.category == category]
        picked += rng.sample(pool, min(per_category, len(pool)))
    return picked


async def ask_newt(
    dialogue: Dialogue,
    home: Path,
    work: Path,
    window: int,
    url: str,
    question: Question,
    tools: bool,
) -> tuple[str, int]:
    """newt's reply to `question` on a copy of the played conversation, and its evidence budget."""
    fresh_copy(home / "newt.db", work)
    config = make_config(work, url, window, [])
    config.server_context_tokens = window
    config.server_reply_cap = REPLY_TOKENS
    config.backend.timeout_s = 900
    config.backend.tools = "on" if tools else "off"
    async with await Store.open(work / "newt.db") as store:
        store.db.clock = lambda: dialogue.asked_at
        session = await ChatSession.open(config, store, probe=False)
        try:
            await session.conversations.continue_latest()
            reply = ""
            async for event in session.turns.send(question.text):
                if isinstance(event, ev.TurnDone):
                    reply = event.reply
            report = session.last_retention
            return reply, report.budget_tokens if report is not None else 0
        finally:
            await session.close()


async def ask_plain(client: httpx.AsyncClient, url: str, lines: list[str], question: str) -> str:
    excerpts = "\n".join(lines) or "(none)"
    body = {
        "model": "qwen",
        "temperature": 0,
        "max_tokens": REPLY_TOKENS,
        "messages": [
            {"role": "system", "content": BASELINE_SYSTEM},
            {"role": "user", "content": f"Excerpts:\n{excerpts}\n\nQuestion: {question}"},
        ],
    }
    response = await client.post(f"{url}/chat/completions", json=body, timeout=900)
    response.raise_for_status()
    return str(response.json()["choices"][0]["message"]["content"] or "")


async def run(args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
    data = Path(args.data)
    dialogues = [load(p) for p in sorted(data.glob("conv-*.json"))]
    picked = sample(dialogues, args.per_category, args.seed)
    played = Path(args.played) if args.played else tmp / "played"
    with FakeOpenAI(n_ctx=args.window) as fake:
        for dialogue in {d.name: d for d, _ in picked}.values():
            home = played / f"{dialogue.name}-{args.window}"
            if not (home / "played").exists():
                home.mkdir(parents=True, exist_ok=True)
                await play(dialogue, home, args.window, fake, argparse.Namespace(set=[], tune=[]))
                (home / "played").write_text("ok")
    binary, _ = obtain_llama_server()
    batch = str(PROMPT_BATCH_TOKENS)
    model = Path(args.model) if args.model else obtain_chat_model()
    server = LocalLlamaServer(
        model, binary=binary, ctx=args.window,
        extra_args=["-n", str(REPLY_TOKENS), "-b", batch, "-ub", batch, "--temp", "0",
                    *template_args(model, cache_dir())],  # the template as newt runs it
    )  # fmt: skip
    server.start()
    rows: list[dict[str, Any]] = []
    try:
        probe = ChatClient(server.base_url, "qwen", timeout_s=900)
        tools = bool(await probe_tool_calls(probe, effective_system_prompt(ChatSettings())))
        print(f"  tools offered: {tools}", file=sys.stderr, flush=True)
        async with httpx.AsyncClient() as client:
            for n, (dialogue, question) in enumerate(picked, 1):
                home = played / f"{dialogue.name}-{args.window}"
                clock = [time.perf_counter()]
                reply, budget = await ask_newt(
                    dialogue, home, tmp / "q", args.window, server.base_url, question, tools
                )
                clock.append(time.perf_counter())
                found = Bm25(dialogue).search(question.text, budget)
                bm25 = await ask_plain(client, server.base_url, found, question.text)
                clock.append(time.perf_counter())
                recent = list(reversed(no_memory(dialogue, args.window - 200, question)))
                plain = await ask_plain(client, server.base_url, recent, question.text)
                clock.append(time.perf_counter())
                gold_turns = [dialogue.texts[e] for e in question.evidence]
                alone = await ask_plain(client, server.base_url, gold_turns, question.text)
                clock.append(time.perf_counter())
                seconds = clock[-1] - clock[0]
                replies = {"newt": reply, "bm25": bm25, "no memory": plain, LINES[-1]: alone}
                rows.append(
                    {
                        "conversation": dialogue.name,
                        "question": question.text,
                        "answer": question.answer,
                        "category": question.category,
                        "replies": replies,
                        "f1": {k: f1(v, question.answer) for k, v in replies.items()},
                        "holds": {k: holds_gold(v, question.answer) for k, v in replies.items()},
                        "seconds": seconds,
                        "line_seconds": dict(
                            zip(
                                replies,
                                (b - a for a, b in itertools.pairwise(clock)),
                                strict=True,
                            )
                        ),
                    }
                )
                print(f"  {n}/{len(picked)} {dialogue.name} [{question.category}] in"
                      f" {seconds:.0f} s: {question.text!r} -> newt {reply[:60]!r}",
                      file=sys.stderr, flush=True)  # fmt: skip
    finally:
        server.stop()
    return rows


def table(rows: list[dict[str, Any]]) -> list[str]:
    names = list(CATEGORIES.values())
    lines = [
        "| line | "
        + " | ".join(f"{n}: F1 / holds gold" for n in names)
        + " | all: F1 / holds gold |",
        "|---|" + "---|" * (len(names) + 1),
    ]
    for line in LINES:
        cells = []
        for cat in [*CATEGORIES, None]:
            mine = [r for r in rows if cat is None or r["category"] == cat]
            if not mine:
                cells.append("-")
                continue
            score = statistics.mean(r["f1"][line] for r in mine)
            held = sum(r["holds"][line] for r in mine)
            cells.append(f"{score:.2f} / {held} of {len(mine)}")
        lines.append(f"| {line} | " + " | ".join(cells) + " |")
    secs = {
        line: statistics.mean(r["line_seconds"][line] for r in rows) if rows else 0.0
        for line in LINES
    }
    each = ", ".join(f"{line} {v:.0f} s" for line, v in secs.items())
    lines += ["", f"{len(rows)} questions; seconds a question: {each}"]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--per-category", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--window", type=int, default=2048)
    parser.add_argument("--played", default="")
    parser.add_argument("--model", default="", help="a chat GGUF (default: Qwen2.5-Coder-1.5B)")
    parser.add_argument("--json-out", default="")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="newt-answers-") as tmp:
        rows = asyncio.run(run(args, Path(tmp)))
    print("\n".join(table(rows)))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
