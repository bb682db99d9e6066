"""Does a fact told early come back in the answer after newt has pruned it?

    python benchmarks/memory_answers.py [--set dev|test|holdout|holdout2|holdout3]
        [--seeds 1,2] [--quick]
        [--designs first,spread] [--modes on,off] [--embeddings on|off|minilm]
        [--config-value SECTION.KEY=VALUE ...] [--server-arg ARG ...]
        [--reply-tokens N] [--threads N] [--binary PATH] [--model GGUF]
        [--pause-for-summaries] [--json-out FILE] [-v]

Drives the real `newt -p --json -c` (one subprocess per turn, NEWT_HOME in a
temporary directory) against llama-server running SmolLM2-135M-Instruct with
`-c 2048 -np 1 -t 2` (scripts/get_llama_server.sh fetches both; `--threads 1`
is far faster when other work keeps both cores busy: 9.8 against 1.4 tokens/s
generated on this project's loaded 2-core machine). newt talks to
the server through a small logging proxy started here, so the benchmark sees
exactly what every request carried.

A run plants facts ("The locker code for the amber harbor is 4417."), talks
about other things until no planted fact's turn is resident any more (checked
on the requests themselves: the fact's message is no longer among the turns
sent), then asks one question per fact. Two designs:
  first   all facts, then filler turns, then the questions
  spread  facts spread between filler turns, then more filler, then the questions
Per question it reports whether the fact's value was in the request (and
where: retained evidence, compaction record, a resident turn) and whether the
reply carried it (and no near-miss sibling's value). Half the facts of a seed
are asked with a paraphrase that shares none of the fact's words of four
letters or more; those rows are reported separately. Recall modes: `on` (the
config as shipped) and `off` (`[recall] retained_token_budget = 0`).

Facts and questions live in benchmarks/memory_answers.toml in five disjoint
sets: `dev` (free to tune on), `test` (the one the README reports), `holdout`
(written after `test` had been read), `holdout2` (written after `holdout` had
been read) and `holdout3` (written after `holdout2` had been read); the
holdouts are measured, never tuned on.
Replies are capped at --reply-tokens by the server's `-n` (newt sends no cap
for chat turns; compaction summaries send their own); sampling is the
server's default with a fixed `--seed` (greedy decoding made this model repeat
its previous reply turn after turn). With `--pause-for-summaries` each turn
waits until the background summary of what it pruned has landed (a person's
pause between messages; in back-to-back `newt -p` runs the next turn preempts
it and the fallback record stands in). The second table is the time to the next
usable prompt: the wall time of each `newt -p` process, for all turns and for
the turns that compacted.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
DATA = HERE / "memory_answers.toml"
# dev: tune on it; test: what the README reports; holdout*: facts nobody tuned against
SETS = ("dev", "test", "holdout", "holdout2", "holdout3")
CONTEXT = 2048
REPLY_TOKENS = 48
FACTS_PER_RUN = 6
QUICK_FACTS = 3
SPREAD_GAP = 3  # filler turns between two facts in the `spread` design
MAX_FILLER = 60  # a run that has not pruned every fact by then is broken
RECALL_OFF = "recall.retained_token_budget=0"
# The meaning-based recall path: `--embeddings on` sets this key to "auto" and has
# llama-server serve /v1/embeddings too (mean pooling over the chat model);
# `--embeddings off` sets it to "off"; `--embeddings minilm` starts a second
# llama-server with all-MiniLM-L6-v2 (as `newt --local` does) and points
# recall.embeddings_url at it. Without the flag neither is touched.
EMBEDDINGS_KEY = "recall.embeddings"
EMBEDDINGS_SERVER_ARGS = ("--embeddings", "--pooling", "mean")


def minilm_config(binary: Path) -> tuple[Any, list[str]]:
    """The MiniLM embeddings server (not started) and the config values that use it."""
    from newt.local.server import embeddings_server

    server = embeddings_server(binary=binary)
    if server is None:
        raise SystemExit("no MiniLM GGUF in the cache: run scripts/get_llama_server.sh")
    url, name = server.base_url, server.model_name
    return server, [f"recall.embeddings_url={url}", f"recall.embedding_model={name}"]


VALUE_POOLS: dict[str, list[str]] = {
    "word": [
        "marigold", "copperleaf", "bluefinch", "tangerine", "saltmarsh", "quillmoor",
        "ravensong", "driftwood", "lanternfly", "moonpetal", "ironbark", "sunfleck",
    ],
    "name": [
        "Biscuit", "Marlowe", "Pepper", "Juniper", "Tofu", "Rascal", "Clementine",
        "Pickles", "Waffles", "Ziggy", "Noodle", "Saffron",
    ],
    "colour": [
        "teal", "maroon", "lavender", "ochre", "turquoise", "crimson", "mustard", "indigo",
    ],
}  # fmt: skip
STOPWORDS = frozenset(
    ("what", "which", "that", "with", "from", "have", "does", "this", "where", "when", "there",
     "their", "your", "mine", "about", "into", "over", "them", "they", "will", "would", "could",
     "should")
)  # fmt: skip


# -- the data -----------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    id: str
    kind: str
    statements: tuple[str, ...]
    question: str
    paraphrase: str
    group: str | None = None


@dataclass(frozen=True)
class Data:
    sets: dict[str, list[Fact]]
    carriers: list[str]
    fillers: list[str]


def _stem(word: str) -> str:
    """Crude stemming, so a paraphrase cannot share a word even after a stemmer."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def rare_words(text: str) -> set[str]:
    words = re.findall(r"[a-z]+", text.lower().replace("'s", ""))
    return {_stem(w) for w in words if len(w) >= 4 and w not in STOPWORDS}


def load_data(path: Path = DATA) -> Data:
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    sets: dict[str, list[Fact]] = {}
    for name in SETS:
        sets[name] = [
            Fact(
                id=f["id"],
                kind=f["kind"],
                statements=tuple(f["statements"]),
                question=f["question"],
                paraphrase=f["paraphrase"],
                group=f.get("group"),
            )
            for f in raw[name]["fact"]
        ]
    data = Data(sets, [c["text"] for c in raw["carrier"]], [f["text"] for f in raw["filler"]])
    check_data(data)
    return data


def check_data(data: Data) -> None:
    """The promises the data makes: disjoint sets, paraphrases without the fact's words."""
    for one, other in itertools.combinations(SETS, 2):
        ids = {f.id for f in data.sets[one]} & {f.id for f in data.sets[other]}
        if ids:
            raise ValueError(f"facts in both {one} and {other}: {sorted(ids)}")
        one_text = {s for f in data.sets[one] for s in f.statements}
        if one_text & {s for f in data.sets[other] for s in f.statements}:
            raise ValueError(f"a statement appears in both {one} and {other}")
    for facts in data.sets.values():
        for fact in facts:
            if fact.kind not in VALUE_POOLS and fact.kind not in ("code4", "gate", "time", "room"):
                raise ValueError(f"{fact.id}: unknown kind {fact.kind}")
            shared = rare_words(fact.paraphrase) & set().union(
                *(rare_words(s.replace("{v}", "")) for s in fact.statements)
            )
            if shared:
                raise ValueError(f"{fact.id}: the paraphrase repeats {sorted(shared)}")
            if not all("{v}" in s for s in fact.statements):
                raise ValueError(f"{fact.id}: a statement lacks {{v}}")


# -- a run's plan -------------------------------------------------------------


@dataclass
class Planted:
    fact: Fact
    value: str
    message: str  # the user turn that tells it
    paraphrased: bool  # asked with the paraphrase
    siblings: tuple[str, ...] = ()  # near-miss values (same group)

    @property
    def question(self) -> str:
        return self.fact.paraphrase if self.paraphrased else self.fact.question


def draw_value(kind: str, rng: random.Random, used: set[str]) -> str:
    while True:
        if kind in VALUE_POOLS:
            value = rng.choice(VALUE_POOLS[kind])
        elif kind == "code4":
            value = str(rng.randint(1000, 9999))
        elif kind == "room":
            value = str(rng.randint(201, 899))
        elif kind == "gate":
            value = f"{rng.choice('ABCDEF')}{rng.randint(10, 49)}"
        else:  # time
            value = f"{rng.randint(1, 11)}:{rng.choice(range(5, 60, 5)):02d}"
        if value.lower() not in used:
            used.add(value.lower())
            return value


def choose_facts(facts: Sequence[Fact], count: int, rng: random.Random) -> list[Fact]:
    """`count` facts; near-miss siblings come together (a group counts as its size)."""
    units: dict[str, list[Fact]] = {}
    for fact in facts:
        units.setdefault(fact.group or fact.id, []).append(fact)
    groups = [unit for unit in units.values() if len(unit) > 1]
    singles = [unit for unit in units.values() if len(unit) == 1]
    rng.shuffle(groups)
    rng.shuffle(singles)
    # one near-miss group per run when the set has one, then single facts
    order = groups[:1] + singles + groups[1:]
    chosen: list[Fact] = []
    for unit in order:
        if len(chosen) + len(unit) <= count:
            chosen += unit
    rng.shuffle(chosen)
    return chosen


def plan_facts(data: Data, set_name: str, seed: int, count: int) -> list[Planted]:
    rng = random.Random(f"{set_name}:{seed}")
    chosen = choose_facts(data.sets[set_name], count, rng)
    used: set[str] = set()
    values = {f.id: draw_value(f.kind, rng, used) for f in chosen}
    planted = []
    for index, fact in enumerate(chosen):
        statement = rng.choice(fact.statements).format(v=values[fact.id])
        wrapper = index % 3  # plain, with a lead-in, or inside a longer turn
        if wrapper == 1:
            statement = rng.choice(["Please remember this: ", "Note for later: "]) + statement
        elif wrapper == 2:
            statement = rng.choice(data.carriers).format(fact=statement)
        siblings = tuple(
            values[o.id] for o in chosen if o.group and o.group == fact.group and o is not fact
        )
        planted.append(Planted(fact, values[fact.id], statement, (index + seed) % 2 == 1, siblings))
    return planted


def filler_stream(data: Data, set_name: str, seed: int) -> Iterable[str]:
    rng = random.Random(f"filler:{set_name}:{seed}")
    while True:
        pool = list(data.fillers)
        rng.shuffle(pool)
        yield from pool


# -- the logging proxy ----------------------------------------------------------


class LoggingProxy:
    """Forwards HTTP/1.1 to llama-server and keeps every chat request body.

    One request per connection (it answers `Connection: close`), which httpx
    handles: enough for a benchmark, and streaming passes through chunk by chunk.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.requests: list[dict[str, Any]] = []
        self.server: asyncio.Server | None = None
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(600.0, connect=10.0))
        self.url = ""
        self.handlers: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    async def close(self) -> None:
        # Requests still in flight (a detached summary's) end here, quietly:
        # left to the loop's shutdown they printed CancelledError tracebacks.
        for task in self.handlers:
            task.cancel()
        await asyncio.gather(*self.handlers, return_exceptions=True)
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
        await self.http.aclose()

    def take(self) -> list[dict[str, Any]]:
        taken, self.requests = self.requests, []
        return taken

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.handlers.add(task)
            task.add_done_callback(self.handlers.discard)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    key, value = line.split(":", 1)
                    headers[key.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            started = time.perf_counter()
            logged: dict[str, Any] | None = None
            if method == "POST" and target.endswith("/chat/completions"):
                logged = json.loads(body)
                self.requests.append(logged)
            forward = {
                k: v for k, v in headers.items() if k in ("content-type", "accept", "authorization")
            }
            request = self.http.build_request(
                method, self.upstream + target, content=body, headers=forward
            )
            response = await self.http.send(request, stream=True)
            try:
                out = [f"HTTP/1.1 {response.status_code} {response.reason_phrase}"]
                for key, value in response.headers.items():
                    if key.lower() not in (
                        "content-length", "transfer-encoding", "connection", "content-encoding",
                    ):  # fmt: skip
                        out.append(f"{key}: {value}")
                out.append("Connection: close")
                writer.write(("\r\n".join(out) + "\r\n\r\n").encode("latin-1"))
                async for chunk in response.aiter_bytes():
                    writer.write(chunk)
                    await writer.drain()
            finally:
                await response.aclose()
                if logged is not None:  # kept beside the body for -v (not sent anywhere)
                    logged["_seconds"] = time.perf_counter() - started
                    logged["_status"] = response.status_code
        except (asyncio.IncompleteReadError, ConnectionError, httpx.HTTPError):
            pass
        finally:
            writer.close()


# -- driving newt ------------------------------------------------------------------


@dataclass
class Turn:
    kind: str  # "fact", "filler", "question"
    text: str
    wall_s: float
    reply: str
    status: str
    compacted: bool
    requests: list[dict[str, Any]]
    output: dict[str, Any]


def write_config(home: Path, base_url: str, values: Sequence[str]) -> None:
    tables: dict[str, dict[str, str]] = {
        "backend": {"base_url": json.dumps(base_url), "model": '"SmolLM2-135M-Instruct"'},
    }
    for item in values:
        key, sep, value = item.partition("=")
        section, dot, name = key.strip().rpartition(".")
        if not sep or not dot:
            raise SystemExit(f"--config-value wants SECTION.KEY=VALUE, got {item!r}")
        value = value.strip()
        if not re.fullmatch(r"-?\d+(\.\d+)?|true|false|\".*\"", value):
            value = json.dumps(value)  # a bare word is a string
        tables.setdefault(section, {})[name] = value
    text = ""
    for section, pairs in tables.items():
        text += f"[{section}]\n" + "".join(f"{k} = {v}\n" for k, v in pairs.items()) + "\n"
    (home / "config.toml").write_text(text, encoding="utf-8")


async def run_newt(home: Path, prompt: str, *, first: bool) -> tuple[dict[str, Any], float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "NEWT_"))}
    env["NEWT_HOME"] = str(home)
    argv = [sys.executable, "-m", "newt", "-p", prompt, "--json", *([] if first else ["-c"])]
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *argv, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await proc.communicate()
    wall = time.perf_counter() - started
    try:
        payload = json.loads(out.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise RuntimeError(
            f"newt -p exited {proc.returncode} without JSON: {err.decode()[-2000:]}"
        ) from None
    return payload, wall


def summary_writers(home: Path, flags: tuple[str, ...] = ("--finish-summary",)) -> list[int]:
    """Live detached newt writers of this NEWT_HOME (cli/detached_writers) run
    with one of `flags`."""
    mark = f"NEWT_HOME={home}".encode()
    wanted = {flag.encode() for flag in flags}
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if not wanted & set((proc / "cmdline").read_bytes().split(b"\0")):
                continue
            if mark in (proc / "environ").read_bytes().split(b"\0"):
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


async def summaries_done(home: Path, *, expected: bool, timeout_s: float = 600.0) -> float:
    """Wait until no detached summary writer of this home is alive; returns the
    seconds waited. A person's pause between messages, in which the summary of
    what was pruned lands. After a compacting turn the writer may not have
    started yet: wait a little for it to appear."""
    started = time.perf_counter()
    while expected and not summary_writers(home) and time.perf_counter() - started < 3.0:
        await asyncio.sleep(0.1)
    while summary_writers(home) and time.perf_counter() - started < timeout_s:
        await asyncio.sleep(0.2)
    return time.perf_counter() - started


class Conversation:
    def __init__(
        self, proxy: LoggingProxy, home: Path, verbose: bool, pause_for_summaries: bool = False
    ) -> None:
        self.proxy = proxy
        self.home = home
        self.turns: list[Turn] = []
        self.verbose = verbose
        self.pause_for_summaries = pause_for_summaries

    async def say(self, kind: str, text: str) -> Turn:
        self.proxy.take()
        payload, wall = await run_newt(self.home, text, first=not self.turns)
        turn = Turn(
            kind=kind,
            text=text,
            wall_s=wall,
            reply=str(payload.get("reply") or ""),
            status=str(payload.get("status")),
            compacted=bool(payload.get("compactions")),
            requests=self.proxy.take(),
            output=payload,
        )
        self.turns.append(turn)
        paused = 0.0
        if self.pause_for_summaries:
            paused = await summaries_done(self.home, expected=turn.compacted)
        if self.verbose:
            mark = " [compacted]" if turn.compacted else ""
            mark += f" [paused {paused:.1f}s for the summary]" if paused >= 0.1 else ""
            for body in turn.requests:
                what = "chat" if body.get("stream") else "summary"
                print(
                    f"      {what} {body.get('_status')} {body.get('_seconds', 0):.1f}s"
                    f" max_tokens={body.get('max_tokens')} messages={len(body['messages'])}",
                    file=sys.stderr,
                )
            print(
                f"    {kind:8} {wall:5.1f}s{mark} {text[:50]!r} -> {turn.reply[:60]!r}",
                file=sys.stderr,
            )
        return turn


def chat_request(turn: Turn) -> dict[str, Any] | None:
    """The turn's first streamed chat request (summaries are not streamed)."""
    for body in turn.requests:
        if body.get("stream"):
            return body
    return None


def content_of(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def resident_messages(body: dict[str, Any], known: set[str]) -> list[str]:
    """Messages of the request that are whole turns said earlier (user or reply)."""
    messages = body.get("messages") or []
    return [content_of(m) for m in messages[:-1] if content_of(m).strip() in known]


def fact_resident(body: dict[str, Any], planted: Planted, known: set[str]) -> bool:
    return planted.message.strip() in {m.strip() for m in resident_messages(body, known)}


def mentions(text: str, value: str) -> bool:
    # a clock time may come back with its half of the day glued on ("5:40pm")
    suffix = r"(?:[ap]\.?m\.?)?" if ":" in value else ""
    pattern = rf"(?<![\w:]){re.escape(value)}{suffix}(?![\w:])"
    return re.search(pattern, text, re.IGNORECASE) is not None


def locate(body: dict[str, Any], value: str, question: str, known: set[str]) -> str | None:
    """Where the request carries the value: "resident", "evidence", "record" or None."""
    messages = body.get("messages") or []
    if any(mentions(m, value) for m in resident_messages(body, known)):
        return "resident"
    if messages:
        last = content_of(messages[-1]).replace(question, "")
        system = [content_of(m) for m in messages[:-1] if m.get("role") == "system"]
        if mentions(last, value) or any(mentions(s, value) for s in system):
            return "evidence"
    rest = [content_of(m) for m in messages[:-1] if m.get("role") != "system"]
    if any(mentions(m, value) for m in rest):
        return "record"  # a non-turn message in the history: the compaction record
    return None


def capsule_lines(body: dict[str, Any]) -> list[str]:
    """The evidence capsules ("- ..." lines of the block before the user's words)."""
    messages = body.get("messages") or []
    if not messages:
        return []
    block, sep, _ = content_of(messages[-1]).rpartition("\n\n")
    return [line for line in block.splitlines() if line.startswith("- ")] if sep else []


def carries(reply: str, value: str, near_misses: Sequence[str]) -> bool:
    """The benchmark's rule: the reply names the value and no near-miss value."""
    return mentions(reply, value) and not any(mentions(reply, m) for m in near_misses)


def evidence_rank(body: dict[str, Any], value: str) -> int | None:
    """1-based position of the first evidence capsule naming the value."""
    for rank, line in enumerate(capsule_lines(body), start=1):
        if mentions(line, value):
            return rank
    return None


@dataclass
class Answer:
    set_name: str
    design: str
    mode: str
    seed: int
    fact_id: str
    paraphrased: bool
    value: str
    where: str | None
    reply_ok: bool
    reply: str
    pruned: bool
    rank: int | None = None  # the fact's capsule position in the evidence, if there
    capsules: int = 0
    siblings_in_reply: bool = False  # a near-miss value was named (the reply counts as wrong)
    siblings: tuple[str, ...] = ()  # the near-miss values (memory_replay.py judges with them)
    messages: list[dict[str, Any]] = field(default_factory=list)  # the question's request


@dataclass
class RunResult:
    answers: list[Answer] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)


async def one_run(
    proxy: LoggingProxy,
    data: Data,
    *,
    set_name: str,
    design: str,
    mode: str,
    seed: int,
    facts: int,
    config_values: Sequence[str],
    verbose: bool,
    pause_for_summaries: bool = False,
) -> RunResult:
    planted = plan_facts(data, set_name, seed, facts)
    fillers = iter(filler_stream(data, set_name, seed))
    with tempfile.TemporaryDirectory(prefix="newt-membench-") as tmp:
        home = Path(tmp)
        values = list(config_values) + ([RECALL_OFF] if mode == "off" else [])
        write_config(home, proxy.url + "/v1", values)
        conv = Conversation(proxy, home, verbose, pause_for_summaries)
        known: set[str] = set()

        async def say(kind: str, text: str) -> Turn:
            turn = await conv.say(kind, text)
            known.add(text.strip())
            if turn.reply.strip():
                known.add(turn.reply.strip())
            return turn

        for index, fact in enumerate(planted):
            if design == "spread" and index:
                for _ in range(SPREAD_GAP):
                    await say("filler", next(fillers))
            await say("fact", fact.message)
        for extra in range(MAX_FILLER + 1):
            last = chat_request(conv.turns[-1])
            still = [p for p in planted if last is None or fact_resident(last, p, known)]
            if not still:
                break
            if extra == MAX_FILLER:
                raise RuntimeError(f"facts still resident after {MAX_FILLER} filler turns")
            await say("filler", next(fillers))

        result = RunResult(turns=conv.turns)
        for fact in planted:
            turn = await say("question", fact.question)
            body = chat_request(turn) or {}
            wrong = any(mentions(turn.reply, s) for s in fact.siblings)
            result.answers.append(
                Answer(
                    set_name=set_name,
                    design=design,
                    mode=mode,
                    seed=seed,
                    fact_id=fact.fact.id,
                    paraphrased=fact.paraphrased,
                    value=fact.value,
                    where=locate(body, fact.value, fact.question, known),
                    reply_ok=carries(turn.reply, fact.value, fact.siblings),
                    reply=turn.reply,
                    pruned=not fact_resident(body, fact, known),
                    siblings_in_reply=wrong,
                    siblings=fact.siblings,
                    rank=evidence_rank(body, fact.value),
                    capsules=len(capsule_lines(body)),
                    messages=list(body.get("messages") or []),
                )
            )
        return result


# -- the report -------------------------------------------------------------------


def pct(hits: int, total: int) -> str:
    return f"{100.0 * hits / total:4.0f}%" if total else "   - "


def answer_table(answers: Sequence[Answer]) -> list[str]:
    rows = [
        "set   design  recall  questions    n  in request  (evid/rec/res)  1st capsule  in reply",
        "----  ------  ------  ----------  --  ----------  --------------  -----------  --------",
    ]
    keys = sorted({(a.set_name, a.design, a.mode) for a in answers}, key=str)
    for set_name, design, mode in keys:
        group = [a for a in answers if (a.set_name, a.design, a.mode) == (set_name, design, mode)]
        for label, chosen in (
            ("all", group),
            ("direct", [a for a in group if not a.paraphrased]),
            ("paraphrase", [a for a in group if a.paraphrased]),
        ):
            n = len(chosen)
            found = sum(a.where is not None for a in chosen)
            where = "/".join(
                str(sum(a.where == w for a in chosen)) for w in ("evidence", "record", "resident")
            )
            ok = sum(a.reply_ok for a in chosen)
            # of the questions whose fact was among the capsules (whatever else
            # also carried it), how many had it in the first one
            in_capsules = sum(a.rank is not None for a in chosen)
            first = f"{sum(a.rank == 1 for a in chosen)}/{in_capsules}"
            rows.append(
                f"{set_name:4}  {design:6}  {mode:6}  {label:10}  {n:2}  {pct(found, n):>10}"
                f"  {where:>14}  {first:>11}  {pct(ok, n):>8}"
            )
    return rows


def timing_table(runs: Sequence[tuple[str, str, RunResult]]) -> list[str]:
    rows = [
        "design  recall  turns  median s  max s  compacting turns  median s  max s",
        "------  ------  -----  --------  -----  ----------------  --------  -----",
    ]
    for design, mode in sorted({(d, m) for d, m, _ in runs}):
        turns = [t for d, m, r in runs if (d, m) == (design, mode) for t in r.turns]
        walls = [t.wall_s for t in turns]
        compacting = [t.wall_s for t in turns if t.compacted]
        med_c = f"{statistics.median(compacting):8.1f}" if compacting else "       -"
        max_c = f"{max(compacting):5.1f}" if compacting else "    -"
        rows.append(
            f"{design:6}  {mode:6}  {len(walls):5}  {statistics.median(walls):8.1f}"
            f"  {max(walls):5.1f}  {len(compacting):16}  {med_c}  {max_c}"
        )
    return rows


# -- main ---------------------------------------------------------------------------


def save_answers(path: Path, answers: Sequence[Answer]) -> None:
    path.write_text(json.dumps([a.__dict__ for a in answers], indent=1), encoding="utf-8")


def default_paths() -> tuple[Path, Path]:
    from newt.local.server import default_model_path, find_llama_server

    return find_llama_server(), default_model_path()


async def main_async(args: argparse.Namespace) -> int:
    from newt.local.server import LocalLlamaServer

    data = load_data()
    binary, model = default_paths()
    binary = Path(args.binary) if args.binary else binary
    model = Path(args.model) if args.model else model
    config_values = list(args.config_value)
    # default sampling (greedy decoding makes this model repeat its last reply), fixed seed
    server_args = ["-n", str(args.reply_tokens), "--seed", "1", *args.server_arg]
    embed_server = None
    if args.embeddings is not None:
        config_values.append(f"{EMBEDDINGS_KEY}={'off' if args.embeddings == 'off' else 'auto'}")
        if args.embeddings == "on":
            server_args += EMBEDDINGS_SERVER_ARGS
        if args.embeddings == "minilm":
            embed_server, values = minilm_config(binary)
            config_values += values
            await embed_server.astart()
    runs: list[tuple[str, str, RunResult]] = []
    answers: list[Answer] = []
    started = time.perf_counter()
    server = LocalLlamaServer(
        model, ctx=CONTEXT, threads=args.threads, binary=binary, extra_args=server_args
    )
    async with server as llm:
        proxy = LoggingProxy(llm.root_url)
        await proxy.start()
        try:
            for set_name in args.sets:
                for design in args.designs:
                    for mode in args.modes:
                        for seed in args.seeds:
                            print(
                                f"run: set={set_name} design={design} recall={mode} seed={seed}",
                                file=sys.stderr,
                            )
                            result = await one_run(
                                proxy,
                                data,
                                set_name=set_name,
                                design=design,
                                mode=mode,
                                seed=seed,
                                facts=args.facts,
                                config_values=config_values,
                                verbose=args.verbose,
                                pause_for_summaries=args.pause_for_summaries,
                            )
                            runs.append((design, mode, result))
                            answers += result.answers
                            if args.json_out:  # after every run: a stopped run keeps the rest
                                save_answers(Path(args.json_out), answers)
        finally:
            await proxy.close()
            if embed_server is not None:
                embed_server.stop()
    elapsed = time.perf_counter() - started
    seeds = ",".join(map(str, args.seeds))
    print(
        f"Memory that answers: SmolLM2-135M-Instruct, llama-server -c {CONTEXT} -t {args.threads}, "
        f"replies <= {args.reply_tokens} tokens, {args.facts} facts per run, seeds {seeds}"
        + (f", config {' '.join(config_values)}" if config_values else "")
        + (", pausing for each summary" if args.pause_for_summaries else "")
    )
    print("in request: the fact's value was in the request (retained evidence, compaction")
    print("record or a resident turn); 1st capsule: of the questions whose fact was in a")
    print("capsule, how many had it in the first capsule; in reply: the reply named the")
    print("value and no near-miss value.")
    print()
    print("\n".join(answer_table(answers)))
    print()
    print("time to the next usable prompt (wall time of each `newt -p`)")
    print("\n".join(timing_table(runs)))
    print(f"\n{len(answers)} questions in {elapsed / 60:.1f} min")
    unpruned = [a for a in answers if not a.pruned]
    if unpruned:
        print(f"warning: {len(unpruned)} questions found their fact still resident")
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", dest="sets", choices=SETS, action="append")
    parser.add_argument("--seeds", default="1,2", help="comma-separated seeds")
    parser.add_argument("--designs", default="first,spread")
    parser.add_argument("--modes", default="on,off", help="recall on / off")
    parser.add_argument("--facts", type=int, default=FACTS_PER_RUN, help="facts per run")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 seed, 3 facts")
    parser.add_argument(
        "--embeddings",
        choices=("on", "off", "minilm"),
        help=f"meaning-based recall: sets {EMBEDDINGS_KEY} (and llama-server --embeddings;"
        " minilm: a second server with all-MiniLM-L6-v2)",
    )
    parser.add_argument(
        "--config-value",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="extra newt config, e.g. recall.excerpt_tokens=48 (repeatable)",
    )
    parser.add_argument(
        "--server-arg", action="append", default=[], help="extra llama-server argument"
    )
    parser.add_argument("--reply-tokens", type=int, default=REPLY_TOKENS)
    parser.add_argument(
        "--pause-for-summaries",
        action="store_true",
        help="after each turn wait until its background summary landed, as a person's pause would",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=2,
        help="llama-server -t (1 is far faster when other work keeps both cores busy)",
    )
    parser.add_argument("--binary", help="llama-server executable")
    parser.add_argument("--model", help="GGUF model (default: SmolLM2-135M-Instruct)")
    parser.add_argument("--json-out", help="write every answer as JSON here")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every turn")
    args = parser.parse_args(argv)
    args.sets = args.sets or ["dev"]
    args.seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    args.designs = [d for d in args.designs.split(",") if d]
    args.modes = [m for m in args.modes.split(",") if m]
    if args.quick:
        args.seeds, args.facts = args.seeds[:1], min(args.facts, QUICK_FACTS)
    for design in args.designs:
        if design not in ("first", "spread"):
            parser.error(f"unknown design {design!r}")
    for mode in args.modes:
        if mode not in ("on", "off"):
            parser.error(f"unknown recall mode {mode!r}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return asyncio.run(main_async(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
