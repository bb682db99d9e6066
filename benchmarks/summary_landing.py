"""Do compaction summaries land in a steady local chat, and what do they cost the next turn?

    .venv/bin/python benchmarks/summary_landing.py [--turns 40] [--gap 2.0] [--threads 2]
        [--binary PATH] [--model GGUF] [--json-out FILE]

Starts llama-server as `newt --local` does (SmolLM2-135M-Instruct from
~/.cache/newt-llama, `-c 2048`, one slot, replies capped at 512 tokens by
`-n`; scripts/get_llama_server.sh fetches both), opens newt's ChatSession
in-process on a temporary NEWT_HOME (the TUI's path: summaries are written in
the background between turns) and sends `--turns` user messages, each
`--gap` seconds after the previous reply ended (a person reading and typing;
0 sends back to back). Recall is by words (no MiniLM server), as with a
`newt --local` whose cache lacks the MiniLM GGUF.

Reported:
  records   compaction records stored in the conversation: how many carry a
            model-written summary (the rest carry only what was owed: a count
            line, and since the owed part, the user's words)
  requests  the record each turn's request carried (read after any overdue
            summary landed, before the request): with a model-written summary,
            with nothing owed, and the most fold steps owed
  waits     seconds from sending to the first reply text, median and max, for
            all turns and for turns that first let an overdue summary land;
            and the seconds spent letting it land
The record text is parsed here (both the owed-part line and the older
"Summary generation was unavailable" line), so the same script measures an
older checkout: `PYTHONPATH=/path/to/old/checkout python benchmarks/summary_landing.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path and not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(ROOT))

CONTEXT = 2048

_OWED = re.compile(r"^No summary written yet: (\d+) message\(s\) were removed in (\d+) step", re.M)
_OLD = re.compile(r"Summary generation was unavailable\. (\d+) message\(s\) were removed\.")
_END = "--- END OF CONTEXT SUMMARY ---"

PLACES = ["Lisbon", "Oslo", "Kyoto", "Lima", "Tromsø", "Porto", "Quito", "Hanoi"]
THINGS = [
    ("my flight leaves from gate {g}", "What should I pack for three days in {p}?"),
    (
        "my sister Ada turns {n} next week",
        "Can you suggest a gift for a {n}-year-old who loves kites?",
    ),
    ("the staging database is on host db-{n}", "How do I check its disk usage from the shell?"),
    ("my locker code at the {p} gym is {c}", "Is it safe to keep a note of codes on my phone?"),
    ("I run {n} km every Sunday", "How should I warm up in cold weather?"),
    ("our team meeting moved to {t}", "Write me a two-line reminder for the team."),
    ("the cat's vet appointment is on the {n}th", "What questions should I ask the vet?"),
    ("my laptop runs Python 3.{n}", "Which features of that version are worth learning?"),
]


def messages(turns: int) -> list[str]:
    """`turns` distinct user messages, each stating a fact and asking something."""
    out = []
    for i in range(turns):
        fact, ask = THINGS[i % len(THINGS)]
        values = {
            "p": PLACES[(i * 3) % len(PLACES)],
            "g": f"{'ABCDE'[i % 5]}{10 + i * 7 % 40}",
            "n": str(4 + (i * 5) % 9),
            "c": str(4000 + i * 137),
            "t": f"{9 + i % 8}:{15 * (i % 4):02d}",
        }
        out.append(f"By the way, {fact.format(**values)}. {ask.format(**values)}")
    return out


def owed(record: str | None) -> tuple[int, int]:
    """(messages, steps) a record still owes a summary for; (0, 0) when none."""
    if not record:
        return 0, 0
    m = _OWED.search(record)
    if m:
        return int(m.group(1)), int(m.group(2))
    old = _OLD.search(record)
    return (int(old.group(1)), 1) if old else (0, 0)


def model_summary(record: str | None) -> str:
    """The model-written part of a record ("" when it carries none)."""
    if not record:
        return ""
    body = record.split("\n\n", 1)[1] if "\n\n" in record else record
    body = body.replace(_END, "")
    for pattern in (_OWED, _OLD):
        m = pattern.search(body)
        if m:
            body = body[: m.start()]
    return body.strip()


def kind_of(record: str | None) -> str:
    if not record:
        return "none"
    return "summary" if model_summary(record) else "owed only"


@dataclass
class TurnFigures:
    index: int
    first_text_s: float | None
    total_s: float
    settle_s: float
    record_summary: bool
    owed_steps: int
    owed_messages: int
    compacted: bool
    status: str


@dataclass
class RunFigures:
    turns: list[TurnFigures] = field(default_factory=list)
    records: int = 0
    records_with_summary: int = 0
    records_fully_summarized: int = 0
    elapsed_s: float = 0.0


async def run_chat(base_url: str, model: str, turns: int, gap: float) -> RunFigures:
    from newt.agent import events as ev
    from newt.agent.session.chat_session import ChatSession
    from newt.config import load_config

    figures = RunFigures()
    with tempfile.TemporaryDirectory(prefix="newt-summaries-") as home:
        os.environ["NEWT_HOME"] = home
        (Path(home) / "config.toml").write_text(
            '[recall]\nembeddings = "off"\n[backend]\ntimeout_s = 600\n'
        )
        config = load_config(base_url=base_url, model=model)
        config.api_key = None
        session = await ChatSession.open(config)
        settle = getattr(session.summaries, "settle", None)
        seen: dict[str, Any] = {}

        async def timed_settle(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await settle(*args, **kwargs)  # type: ignore[misc]
            finally:
                seen["settle_s"] = time.perf_counter() - started
                seen["record"] = getattr(session.provider, "record", None)

        if settle is not None:
            session.summaries.settle = timed_settle  # type: ignore[method-assign]
        started_all = time.perf_counter()
        try:
            for index, text in enumerate(messages(turns)):
                seen.clear()
                seen["record"] = getattr(session.provider, "record", None)
                started = time.perf_counter()
                first: float | None = None
                compacted = False
                status = "?"
                async for event in session.turns.send(text):
                    if isinstance(event, ev.TextDelta) and first is None:
                        first = time.perf_counter() - started
                    elif isinstance(event, ev.Compacted):
                        compacted = True
                    elif isinstance(event, ev.TurnDone):
                        status = event.status
                total = time.perf_counter() - started
                record = seen.get("record")
                owed_messages, owed_steps = owed(record)
                figures.turns.append(
                    TurnFigures(
                        index=index,
                        first_text_s=first,
                        total_s=total,
                        settle_s=float(seen.get("settle_s", 0.0)),
                        record_summary=bool(model_summary(record)),
                        owed_steps=owed_steps,
                        owed_messages=owed_messages,
                        compacted=compacted,
                        status=status,
                    )
                )
                print(
                    f"turn {index + 1:2d}: first text {first or 0:6.1f} s, whole {total:6.1f} s,"
                    f" settled {figures.turns[-1].settle_s:5.1f} s, record:"
                    f" {kind_of(record)}"
                    f" owing {owed_steps} step(s){' | compacted' if compacted else ''}",
                    flush=True,
                )
                await asyncio.sleep(gap)
            # a person who keeps the chat open: the last summary gets its chance
            await session.summaries.wait(600)
            figures.elapsed_s = time.perf_counter() - started_all
            assert session.conversation is not None
            log = await session.store.turns.for_conversation(session.conversation.id)
            rows = [t.user for t in log if t.kind == "compaction"]
            figures.records = len(rows)
            figures.records_with_summary = sum(1 for r in rows if model_summary(r))
            figures.records_fully_summarized = sum(
                1 for r in rows if model_summary(r) and owed(r) == (0, 0)
            )
        finally:
            await session.close()
    return figures


def seconds(values: list[float]) -> str:
    if not values:
        return "-"
    return f"median {statistics.median(values):.1f} s, max {max(values):.1f} s (n={len(values)})"


def report(figures: RunFigures) -> list[str]:
    turns = figures.turns
    with_record = [t for t in turns if t.owed_steps or t.record_summary]
    settled = [t for t in turns if t.settle_s >= 0.5]
    firsts = [t.first_text_s for t in turns if t.first_text_s is not None]
    pct = lambda a, b: f"{a}/{b} ({100.0 * a / b:.0f}%)" if b else "-"  # noqa: E731
    return [
        f"records stored: {figures.records}; with a model-written summary "
        f"{pct(figures.records_with_summary, figures.records)}; summary landings (nothing owed) "
        f"{figures.records_fully_summarized}",
        f"requests carrying a record: {len(with_record)}; with a model-written summary "
        f"{pct(sum(t.record_summary for t in with_record), len(with_record))}; nothing owed "
        f"{pct(sum(t.owed_steps == 0 for t in with_record), len(with_record))}; most steps owed "
        f"{max((t.owed_steps for t in turns), default=0)}",
        f"first reply text: all turns {seconds(firsts)}",
        f"  turns that let a summary land first: "
        f"{seconds([t.first_text_s for t in settled if t.first_text_s is not None])}",
        f"  other turns: "
        f"{seconds([t.first_text_s for t in turns if t not in settled and t.first_text_s])}",
        f"time letting a summary land: {seconds([t.settle_s for t in settled])}",
        f"whole chat: {figures.elapsed_s:.0f} s; turn statuses: "
        f"{sorted({t.status for t in turns})}",
    ]


async def main_async(args: argparse.Namespace) -> RunFigures:
    from newt.local.server import LocalLlamaServer, reply_token_cap

    server = LocalLlamaServer(
        args.model or None,
        ctx=CONTEXT,
        threads=args.threads,
        binary=args.binary,
        extra_args=["-n", str(reply_token_cap(CONTEXT)), "--seed", str(args.seed)],
    )
    async with server as llm:
        return await run_chat(llm.base_url, llm.model_name, args.turns, args.gap)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument(
        "--gap", type=float, default=2.0, help="seconds between a reply and the next message"
    )
    parser.add_argument("--threads", type=int, default=2, help="llama-server -t")
    parser.add_argument("--seed", type=int, default=1, help="llama-server --seed")
    parser.add_argument("--binary", help="llama-server executable")
    parser.add_argument("--model", help="chat GGUF (default: SmolLM2-135M-Instruct)")
    parser.add_argument("--json-out", help="write every turn's figures here")
    args = parser.parse_args()
    figures = asyncio.run(main_async(args))
    print()
    print(
        f"Summary landing: {args.turns} turns, gap {args.gap} s, llama-server -c {CONTEXT} "
        f"-np 1 -t {args.threads}"
    )
    for line in report(figures):
        print(line)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(asdict(figures), indent=1))


if __name__ == "__main__":
    main()
