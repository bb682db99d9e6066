"""How much of each request could a server that caches the last prompt reuse?

    .venv/bin/python benchmarks/prefix_reuse.py [--mode inproc|cli|both]
        [--window 2048 --window 8192] [--turns N] [--seed 1] [--examples 1]
        [--json-out FILE] [--fold-to SHARE] [--locomo CONV] [--real [--real-model GGUF]]

A long everyday conversation (seeded, deterministic: short chit-chat,
questions, personal facts with a question, longer paragraphs; 40 turns at a
2,048-token window, 60 at 8,192 unless `--turns`) is played through newt's
real turn path against the repo's fake OpenAI-compatible server
(tests/support/fake_openai.py, a real HTTP server on 127.0.0.1). Its replies
are deterministic too, chosen by the user's words (30-250 words of advice,
sometimes a list); a summary request gets a summary built from the turns it
was handed (the previous summary's bullets plus one bullet per removed user
message, the last 12 kept). The window is `[memory] context_tokens` (the fake
also reports it as n_ctx); recall is by words (`embeddings = "off"`), so
nothing depends on background embedding.

`--locomo conv-41`: the first turns of a LoCoMo dev conversation instead
(../shared/data/locomo-dev/; one speaker's lines as the user's, the other's
as the replies).

Modes (default both):
  inproc  ChatSession in process (the TUI's path); after each turn the
          background summary of what was folded is let land before the next
          message (a person reading and typing), as the app does.
  cli     every turn its own `newt -c -p MESSAGE` process on a temporary
          NEWT_HOME (the first without -c); print mode's detached
          `--finish-summary` writer is waited for before the next turn.

Every chat-completions request the server received is rendered as a ChatML
chat template would put it: the tool schemas first (one
`<|im_start|>tools\\n{JSON}<|im_end|>\\n` block, when the request has tools),
then every message as `<|im_start|>{role}\\n{content}<|im_end|>\\n` (a
message's tool_calls as JSON after its content), then the generation prompt
`<|im_start|>assistant\\n`. Tokens are approximated by a fixed rule: the
ChatML markers count one each, the rest is split by Qwen2's pre-tokenizer
pattern (letter runs with one leading space or mark, single digits,
punctuation runs, whitespace runs), each piece one token. No vocabulary: long
words count one, so totals are below a real tokenizer's, but a prefix is
compared exactly. A request is a summary request when its system message, or
its first user message, opens with newt's compaction prompt
(assets/compaction_prompt.md); every other one is a chat request.

Per chat request: the longest common prefix in tokens with the request the
server read just before it, whatever its kind (a one-slot server such as
`llama-server -np 1`: a summary request in between evicts the chat's cache),
and with the previous chat request (a server that keeps summaries in a slot
of their own). Re-read = tokens - common prefix. The least anything could
re-read is what no cache could hold: the previous reply and the new message
(rendered, with any recalled lines inside it) and the generation prompt,
i.e. the messages after the previous user message, less the reply's header
that the previous request's generation prompt already carried.

Columns (turn 1 left out of the sums: nothing precedes it; in brackets, the
same from the turn the window filled on):
  tokens        chat prompt tokens after turn 1 (this rule's count)
  one slot      share of them re-read on a one-slot server
  own slot      share re-read when summaries have a slot of their own
  least         the least possible share (previous reply + new message)
  summaries     summary requests, and their tokens
  filled        the first turn whose prefix broke: its common prefix with the
                previous chat request is shorter than that request's system
                prompt and history (everything before its last message)
  broke         turns (after turn 1) whose prefix broke so
  changed first on every turn where anything the previous chat request held
                changed, the first block of this request that differs, counted:
                "record: fold" (the compaction record appears, or the previous
                request's oldest history message is gone), "record: summary
                landed" (the record's model-written summary changed), both
                ("record: fold + summary"), "previous message" (the last
                request's message, sent with recalled lines in front, is in
                the history without them), "system prompt", "tools", "history"

`--examples N` prints, per window and mode, the first N breaks' first
differing message as a diff. `--json-out FILE` writes one row per request.
`PYTHONPATH=/path/to/other/checkout` measures that checkout's newt (in process
and in the `newt -p` processes).

`--real`: after each window's first mode, the requests the fake server got
are sent again, in the same order, to the llama-server newt runs
(newt.agent.local.managed_server: one slot, 256-token batches, the build's
default prompt cache in RAM; its window twice `--window`, so the real
tokenizer's count fits), each asking for one token, with `--real-model`
(default Qwen2.5-Coder-1.5B-Instruct from ~/.cache/newt-llama;
scripts/get_llama_server.sh puts it there). Its own table, from llama-server's
`timings` (chat requests after turn 1; in brackets from the filled turn):
  tokens        cache_n + prompt_n
  re-read       prompt_n's share of them
  least         this script's least share, beside it
  to first token  seconds to the one-token answer (reading the prompt and
                writing a token), median before the window filled and after
  summaries read  prompt_n of the summary requests
Slow: the 40 turns at 2,048 take minutes of prompt reading on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
# With PYTHONPATH set (an older checkout to measure), its newt wins; the
# fake server and the writer lookup still come from here.
if os.environ.get("PYTHONPATH"):
    sys.path.append(str(ROOT))
else:
    sys.path.insert(0, str(ROOT))

from benchmarks.memory_answers import summary_writers  # noqa: E402
from newt.agent.local.managed_server import managed_server  # noqa: E402
from newt.agent.session.chat_session import ChatSession  # noqa: E402
from newt.config import Config  # noqa: E402
from newt.local.setup import cache_dir  # noqa: E402
from newt.memory.compaction import COMPACTION_PROMPT_ASSET  # noqa: E402
from newt.memory.types import COMPACTION_END, COMPACTION_MARKER  # noqa: E402
from newt.resources import asset_text  # noqa: E402
from newt.store import Store  # noqa: E402
from tests.support.fake_openai import FakeOpenAI, Reply  # noqa: E402

MODEL = "fake-model"
DEFAULT_WINDOWS = (2048, 8192)
TURN_TIMEOUT_S = 120.0
SUMMARY_PROMPT = asset_text(COMPACTION_PROMPT_ASSET).strip()[:80]
SUMMARY_BULLETS = 12
REAL_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"

# -- the conversation ---------------------------------------------------------------

NAMES = ["Ada", "Tomas", "Priya", "Jonas", "Mei", "Rafael", "Ingrid", "Kofi", "Lena", "Yusuf"]
CITIES = ["Lisbon", "Oslo", "Kyoto", "Lima", "Porto", "Quito", "Hanoi", "Leeds", "Graz", "Cork"]
JOBS = ["nurse", "bookkeeper", "carpenter", "teacher", "data analyst", "baker", "translator"]
PETS = ["Biscuit", "Miso", "Pepper", "Olive", "Rusty", "Nori"]
FOODS = ["chickpeas", "spinach", "leftover chicken", "tofu", "mushrooms", "lentils", "eggs"]
MONTHS = ["March", "April", "May", "June", "September", "October", "November"]
BOOKS = ["Piranesi", "The Remains of the Day", "Stoner", "A Gentleman in Moscow", "Circe"]

CHATTER = [
    "Morning!",
    "Thanks, that helps a lot.",
    "Ha, fair enough.",
    "Ok, makes sense.",
    "Hmm, not sure I agree with that.",
    "Long day today, I'm exhausted.",
    "Can you say that more briefly?",
    "Good point, I hadn't thought of it.",
    "I'll try that tonight and tell you how it went.",
    "What do you think?",
    "Back again. Where were we?",
    "Nice, thank you!",
    "That was too long, sorry, I only skimmed it.",
    "Right, I'm off to make tea.",
]
QUESTIONS = [
    "How long should I boil an egg for a soft yolk?",
    "What's a good way to keep basil alive indoors?",
    "Any tips for falling asleep faster?",
    "How do I get rid of the smell in a metal water bottle?",
    "What's the difference between baking soda and baking powder?",
    "Is it worth learning to touch type as an adult?",
    "How often should I water a cactus in winter?",
    "What should I read after {book}?",
    "How do I politely decline a wedding invitation?",
    "Suggest a quick dinner with {food} and rice.",
    "How do I stop my glasses fogging up with a scarf on?",
    "What's a reasonable budget for a weekend in {city}?",
    "How can I get better at remembering people's names?",
    "Why does bread go stale faster in the fridge?",
    "Give me three stretches for a stiff neck.",
    "Is it rude to wear headphones at work?",
]
FACTS = [
    "By the way, my sister {name} lives in {city} now.",
    "I work as a {job} at a small company, {n} years now.",
    "My dog {pet} is {n} years old and hates the rain.",
    "I'm allergic to {food}, just so you know.",
    "We're moving to {city} in {month}.",
    "My daughter's birthday is on {month} {day}.",
    "I started running again, {n} km every Sunday.",
    "My neighbour {name} lent me a ladder last week.",
    "I'm learning Portuguese for a trip to {city}.",
    "My car is a {year} hatchback and the clutch is going.",
]
SENTENCES = [
    "This week has been a lot.",
    "Work was busy because two people on my team were off sick.",
    "On Tuesday I finally cleaned out the garage, which took the whole evening.",
    "My partner and I argued about whether to repaint the kitchen or leave it.",
    "I keep meaning to call my mum more often, but the evenings vanish.",
    "The weather turned cold overnight and the heating made a strange knocking noise.",
    "I found an old notebook full of recipes my grandmother wrote down.",
    "We tried a new bakery near the station and the sourdough was excellent.",
    "My phone's battery now lasts half a day, which is annoying.",
    "I signed up for a pottery class that starts next month.",
    "The bus was late three mornings in a row.",
    "I've been sleeping badly since the clocks changed.",
    "A friend asked me to help plan her fortieth birthday party.",
    "I'm trying to spend less time on my phone before bed.",
    "The kids have a school project about volcanoes due on Friday.",
    "Our landlord says the rent is going up again in spring.",
    "I read half a novel on the train and can't decide if I like it.",
    "The garden is full of snails this year.",
]
ASKS = [
    "Anyway, how would you plan the next few days?",
    "What would you do in my place?",
    "Is there anything I'm missing?",
    "Can you help me make a short list of priorities?",
    "Any advice?",
]
REPLY_SENTENCES = [
    "That sounds like a sensible plan.",
    "A good first step is to keep it simple and see what works for you.",
    "Most people find it easier to start small and build a habit over a few weeks.",
    "If it keeps bothering you, it is worth asking someone who knows the details.",
    "You could also write it down, which makes it easier to come back to later.",
    "Timing matters here: mornings tend to work better than late evenings.",
    "There is no single right answer, but a few things usually help.",
    "Try it for a week and notice what changes.",
    "Keep an eye on cost, since the cheaper option is often good enough.",
    "It is normal for this to take a little while to settle.",
    "Ask around as well, because friends often have practical tips.",
    "Be kind to yourself if it does not work the first time.",
    "A short walk or a glass of water can make more difference than it seems.",
    "The details depend on your situation, so adjust as you go.",
]


def user_messages(turns: int, seed: int) -> list[str]:
    """`turns` distinct messages one person might send: chit-chat, a question,
    a fact about their life (each said once, one persona) with a question, or
    a paragraph about their week."""
    rng = random.Random(seed)
    persona = {
        "name": rng.choice(NAMES),
        "city": rng.choice(CITIES),
        "job": rng.choice(JOBS),
        "pet": rng.choice(PETS),
        "food": rng.choice(FOODS),
        "month": rng.choice(MONTHS),
        "book": rng.choice(BOOKS),
        "n": str(rng.randint(2, 14)),
        "day": str(rng.randint(1, 28)),
        "year": str(rng.randint(2006, 2019)),
    }
    facts = rng.sample(FACTS, len(FACTS))
    questions: list[str] = []
    out: list[str] = []
    while len(out) < turns:
        if not questions:
            questions = rng.sample(QUESTIONS, len(QUESTIONS))
        values = {**persona, "city": rng.choice(CITIES), "food": rng.choice(FOODS)}
        kind = rng.choices(["chatter", "question", "fact", "paragraph"], [3, 3, 2, 2])[0]
        if kind == "fact" and facts:
            text = f"{facts.pop()} {questions.pop()}".format(**{**values, **persona})
        elif kind in ("question", "fact"):
            text = questions.pop().format(**values)
        elif kind == "chatter":
            text = rng.choice(CHATTER)
        else:
            said = rng.sample(SENTENCES, rng.randint(4, 9))
            text = " ".join([*said, rng.choice(ASKS)])
        if text not in out:  # each message names its turn
            out.append(text)
    return out


def reply_text(seed: int, said: str) -> str:
    """The model's reply to `said`: deterministic, 30-250 words, sometimes a list."""
    rng = random.Random(f"{seed}:{said}")
    count = rng.choice([2, 3, 4, 5, 6, 8, 10, 14, 18])
    picked = [rng.choice(REPLY_SENTENCES) for _ in range(count)]
    if count >= 6 and rng.random() < 0.4:
        head, items = picked[:2], picked[2:]
        return " ".join(head) + "\n\n" + "\n".join(f"- {s}" for s in items)
    return " ".join(picked)


def summary_text(request: dict[str, Any]) -> str:
    """A summary request's answer: the previous summary's bullets, then one per
    user message it was handed, the last SUMMARY_BULLETS kept."""
    text = last_user_text(request)
    previous = text.partition("Previous summary:\n")[2].partition("\n\nTurns removed")[0]
    bullets = [line for line in previous.splitlines() if line.startswith("- ")]
    for line in text.splitlines():
        if line.startswith("User: "):
            said = re.split(r"(?<=[.?!])\s", line[6:].strip(), maxsplit=1)[0][:90]
            bullets.append(f"- The user said: {said}")
    return "\n".join(bullets[-SUMMARY_BULLETS:]) or "- Nothing of note."


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def last_user_text(request: dict[str, Any]) -> str:
    for message in reversed(request.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def own_words(text: str) -> str:
    """The user's message without a recalled-lines block in front of it."""
    return text.rsplit("\n\n", 1)[-1]


def is_summary(request: dict[str, Any]) -> bool:
    """Its system message, or (started as the chat requests are) its first
    user message, opens with newt's compaction prompt."""
    messages = [m for m in request.get("messages") or [] if isinstance(m, dict)]
    heads = [m for m in messages[:2] if m.get("role") in ("system", "user")]
    return any(content_text(m.get("content")).startswith(SUMMARY_PROMPT) for m in heads)


class Responder:
    """The fake server's answers, chosen from each request alone (so a summary
    request in between, or another process, shifts nothing)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def __call__(self, request: dict[str, Any]) -> Reply:
        if is_summary(request):
            return Reply(text=summary_text(request), chunk_size=4096)
        return Reply(
            text=reply_text(self.seed, own_words(last_user_text(request))), chunk_size=4096
        )


class LocomoResponder(Responder):
    """`--locomo`: the other speaker's words as the reply to each line."""

    def __init__(self, replies: dict[str, str]) -> None:
        super().__init__(0)
        self.replies = replies

    def __call__(self, request: dict[str, Any]) -> Reply:
        own = own_words(last_user_text(request))
        if is_summary(request) or own not in self.replies:
            return super().__call__(request)
        return Reply(text=self.replies[own] or "...", chunk_size=4096)


def locomo_exchanges(name: str, turns: int) -> dict[str, str]:
    """The first `turns` exchanges of a LoCoMo dev conversation: line -> reply."""
    from benchmarks.locomo import load

    dialogue = load(ROOT.parent / "shared" / "data" / "locomo-dev" / f"{name}.json")
    return {ex.user: ex.reply for ex in dialogue.exchanges[:turns]}


# -- rendering and tokens --------------------------------------------------------------

START, END = "<|im_start|>", "<|im_end|>"
GENERATION = f"{START}assistant\n"
_SPECIAL = re.compile(r"(<\|im_start\|>|<\|im_end\|>)")
# Qwen2's pre-tokenizer pattern with \p{L} as [^\W\d_] and \p{N} as \d
_PIECE = re.compile(
    r"'(?:s|t|re|ve|m|ll|d)|[^\r\n\w]?[^\W\d_]+|\d| ?(?:[^\s\w]|_)+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+",
    re.IGNORECASE,
)


def tokens(text: str) -> list[str]:
    out: list[str] = []
    for part in _SPECIAL.split(text):
        if part in (START, END):
            out.append(part)
        elif part:
            out.extend(_PIECE.findall(part))
    return out


GENERATION_TOKENS = len(tokens(GENERATION))


@dataclass
class Rendered:
    """One request as a chat template would put it: its blocks (the tools,
    then each message, then the generation prompt), each block's label and
    token count."""

    kind: str  # chat | summary
    turn: int  # 1-based turn of the user's message (0: not one of ours)
    blocks: list[str]
    labels: list[str]
    flat: list[str]
    sizes: list[int]

    @property
    def total(self) -> int:
        return len(self.flat)

    def upto(self, index: int) -> int:
        """Tokens of the blocks before `index`."""
        return sum(self.sizes[:index])


def render(body: dict[str, Any], turn_of: dict[str, int]) -> Rendered:
    blocks: list[str] = []
    labels: list[str] = []
    if body.get("tools"):
        blocks.append(f"{START}tools\n{json.dumps(body['tools'], ensure_ascii=False)}{END}\n")
        labels.append("tools")
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    summary = is_summary(body)
    for i, m in enumerate(messages):
        text = content_text(m.get("content"))
        if m.get("tool_calls"):
            text += "\n" + json.dumps(m["tool_calls"], ensure_ascii=False)
        role = str(m.get("role", ""))
        blocks.append(f"{START}{role}\n{text}{END}\n")
        if summary:
            labels.append(f"summary {role}")
        elif i == 0 and role == "system":
            labels.append("system prompt")
        elif text.startswith(COMPACTION_MARKER):
            labels.append("compaction record")
        elif i == len(messages) - 1:
            labels.append("new message")
        else:
            labels.append(f"history {role}")
    blocks.append(GENERATION)
    labels.append("generation prompt")
    sizes = [len(tokens(b)) for b in blocks]
    flat = [t for b in blocks for t in tokens(b)]
    kind = "summary" if summary else "chat"
    turn = 0 if summary else turn_of.get(own_words(last_user_text(body)), -1) + 1
    return Rendered(kind, turn, blocks, labels, flat, sizes)


def common_prefix(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def least_tokens(req: Rendered) -> int:
    """Tokens no cache could hold: the blocks after the previous user message
    (the reply to it, the new message, the generation prompt), less the
    reply's header the previous request's generation prompt carried."""
    roles = [b[len(START) :].split("\n", 1)[0] for b in req.blocks[:-1]]
    users = [i for i, r in enumerate(roles) if r == "user"]
    if len(users) < 2:
        return req.total
    after = users[-2] + 1
    least = req.total - req.upto(after)
    if roles[after] == "assistant":
        least -= GENERATION_TOKENS
    return least


@dataclass
class Row:
    seq: int
    kind: str
    turn: int
    tokens: int
    prefix_one_slot: int
    prefix_own_slot: int
    reread_one_slot: int
    reread_own_slot: int
    least: int
    changed: bool  # something of the previous chat request changed (not all reusable)
    broke: bool  # ... before its last message: its system prompt or history
    first_change: str  # label of the first block that differs from the previous chat request
    first_change_index: int
    # --real: llama-server's own count of this request replayed (timings.cache_n/prompt_n)
    real_cached: int | None = None
    real_read: int | None = None
    real_s: float | None = None  # to its one-token answer: reading the prompt, first token


@dataclass
class Example:
    turn: int
    label: str
    diff: list[str]


@dataclass
class Run:
    window: int
    mode: str
    turns: int
    seconds: float = 0.0
    rows: list[Row] = field(default_factory=list)
    examples: list[Example] = field(default_factory=list)
    real_model: str = ""
    real_seconds: float = 0.0


_OWED = re.compile(r"^No summary written yet: (\d+) message", re.M)


def record_parts(block: str) -> tuple[str, int] | None:
    """(model-written summary, messages owed) of a rendered record; None: not one."""
    text = block.split("\n", 1)[1] if "\n" in block else block
    if not text.startswith(COMPACTION_MARKER):
        return None
    body = text.split("\n\n", 1)[1] if "\n\n" in text else ""
    body = body.replace(END, "").replace(COMPACTION_END, "")
    owed = _OWED.search(body)
    if owed is None:
        return body.strip(), 0
    return body[: owed.start()].strip(), int(owed.group(1))


def what_changed(old: Rendered, new: Rendered, index: int) -> str:
    """What the first block that differs is, and for a record, why it changed:
    a fold (the previous request's oldest history message is gone) and/or a
    summary that landed (the record's model-written part changed)."""
    if index >= len(new.blocks) - 1:
        return "end"
    if index == len(old.blocks) - 2 and new.labels[index] == "history user":
        return "previous message"  # it was sent with recalled lines, now kept without
    if new.labels[index] != "compaction record":
        return new.labels[index]
    oldest = next(
        (b for b, lab in zip(old.blocks, old.labels, strict=True) if lab.startswith("history")), ""
    )
    folded = bool(oldest) and oldest not in new.blocks
    before = record_parts(old.blocks[index]) if index < len(old.blocks) else None
    after = record_parts(new.blocks[index])
    landed = before is not None and after is not None and before[0] != after[0]
    if folded and landed:
        return "record: fold + summary"
    if folded or before is None:
        return "record: fold"
    return "record: summary landed" if landed else "record: other"


def first_difference(old: Rendered, new: Rendered) -> int:
    for i, (a, b) in enumerate(zip(old.blocks, new.blocks, strict=False)):
        if a != b:
            return i
    return min(len(old.blocks), len(new.blocks))


def block_diff(old: str, new: str, lines: int = 24) -> list[str]:
    diff = difflib.unified_diff(
        old.splitlines(), new.splitlines(), "previous", "this", n=1, lineterm=""
    )
    out = [line[:160] for line in diff]
    return out[:lines] + (["..."] if len(out) > lines else [])


def measure(run: Run, bodies: list[dict[str, Any]], texts: list[str], examples: int) -> None:
    turn_of = {t: i for i, t in enumerate(texts)}
    previous: Rendered | None = None
    previous_chat: Rendered | None = None
    for seq, body in enumerate(bodies):
        req = render(body, turn_of)
        one = common_prefix(previous.flat, req.flat) if previous else 0
        own = common_prefix(previous_chat.flat, req.flat) if previous_chat else 0
        if req.kind == "summary":
            run.rows.append(Row(seq, "summary", 0, req.total, one, 0, req.total - one, 0, 0,
                                False, False, "", -1))  # fmt: skip
            previous = req
            continue
        changed, broke, label, index = False, False, "", -1
        if previous_chat is not None:
            changed = own < previous_chat.total
            index = first_difference(previous_chat, req)
            label = what_changed(previous_chat, req, index)
            # its system prompt and history: everything before its last message
            broke = own < previous_chat.upto(len(previous_chat.blocks) - 2)
            if broke and len(run.examples) < examples:
                old = previous_chat.blocks[index] if index < len(previous_chat.blocks) else ""
                new = req.blocks[index] if index < len(req.blocks) else ""
                run.examples.append(Example(req.turn, label, block_diff(old, new)))
        run.rows.append(
            Row(seq, "chat", req.turn, req.total, one, own, req.total - one, req.total - own,
                least_tokens(req), changed, broke, label, index)
        )  # fmt: skip
        previous = previous_chat = req


# -- the two ways of driving newt ------------------------------------------------------


def chat_bodies(fake: FakeOpenAI) -> list[dict[str, Any]]:
    return [r.body for r in fake.chat_requests if isinstance(r.body, dict)]


async def play_inproc(
    home: Path, window: int, texts: list[str], fake: FakeOpenAI, fold_to: float | None
) -> None:
    """ChatSession in process; the summary owed after a turn lands before the next."""
    os.environ["NEWT_HOME"] = str(home)
    config = Config(path=home / "config.toml", db_path=home / "newt.db")
    config.backend.base_url = fake.base_url
    config.backend.model = MODEL
    config.memory.context_tokens = window
    if fold_to is not None:
        config.memory.fold_to = fold_to
    config.recall.embeddings = "off"
    async with await Store.open(config.db_path) as store:
        session = await ChatSession.open(config, store, probe=False)
        try:
            for text in texts:
                async for _ in session.turns.send(text):
                    pass
                await session.summaries.wait(TURN_TIMEOUT_S)  # the person reads and types
        finally:
            await session.close()


def newt_p(home: Path, fake: FakeOpenAI, text: str, *, resume: bool) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "NEWT_"))}
    env["NEWT_HOME"] = str(home)
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH") or str(ROOT)
    argv = [sys.executable, "-m", "newt", "--base-url", fake.base_url, "--model", MODEL]
    argv += [*(["-c"] if resume else []), "-p", text]
    done = subprocess.run(
        argv, env=env, cwd=home, capture_output=True, text=True, timeout=TURN_TIMEOUT_S
    )
    if done.returncode != 0:
        raise RuntimeError(f"newt -p failed ({done.returncode}): {done.stderr[-600:]}")


async def play_cli(
    home: Path, window: int, texts: list[str], fake: FakeOpenAI, fold_to: float | None
) -> None:
    """Each turn a `newt -c -p` process; its detached summary writer ends before the next."""
    fold = "" if fold_to is None else f"fold_to = {fold_to}\n"
    config = f'[memory]\ncontext_tokens = {window}\n{fold}\n[recall]\nembeddings = "off"\n'
    (home / "config.toml").write_text(config, encoding="utf-8")
    flags = ("--finish-summary", "--catch-up-vectors")
    for n, text in enumerate(texts):
        await asyncio.to_thread(newt_p, home, fake, text, resume=n > 0)
        deadline = time.monotonic() + TURN_TIMEOUT_S
        while summary_writers(home, flags) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if summary_writers(home, flags):
            raise RuntimeError(f"a detached writer is still running after turn {n + 1}")


async def one_run(
    window: int, mode: str, turns: int, args: argparse.Namespace
) -> tuple[Run, list[dict[str, Any]]]:
    run = Run(window, mode, turns)
    fake = FakeOpenAI(n_ctx=window, model=MODEL)
    if args.locomo:
        replies = locomo_exchanges(args.locomo, turns)
        texts = list(replies)
        fake.responder = LocomoResponder(replies)
    else:
        texts = user_messages(turns, args.seed)
        fake.responder = Responder(args.seed)
    fake.start()
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="newt-prefix-") as tmp:
            play = play_inproc if mode == "inproc" else play_cli
            await play(Path(tmp), window, texts, fake, args.fold_to)
    finally:
        fake.stop()
    run.seconds = time.perf_counter() - started
    bodies = chat_bodies(fake)
    measure(run, bodies, texts, args.examples)
    return run, bodies


# -- --real: the same requests read by llama-server ------------------------------------


def replay(run: Run, bodies: list[dict[str, Any]], model: Path) -> None:
    """Send the run's requests, in the order the fake server got them, to the
    llama-server newt runs (one slot, its prompt cache as configured), each
    asking for one token; keep what it says it took from its cache and read."""
    server = managed_server(model)
    server.ctx = 2 * run.window  # room for the real tokenizer's count
    run.real_model = model.stem
    started = time.perf_counter()
    server.start()
    try:
        with httpx.Client(timeout=1800) as http:
            for row, body in zip(run.rows, bodies, strict=True):
                payload = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
                payload.update(stream=False, max_tokens=1, temperature=0, cache_prompt=True)
                asked = time.perf_counter()
                response = http.post(f"{server.base_url}/chat/completions", json=payload)
                row.real_s = time.perf_counter() - asked
                response.raise_for_status()
                timings = response.json().get("timings") or {}
                row.real_cached = int(timings.get("cache_n", 0))
                row.real_read = int(timings.get("prompt_n", 0))
                print(
                    f"  {row.kind} turn {row.turn}: {row.real_read} read, {row.real_cached} "
                    f"cached, {row.real_s:.1f} s",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        server.stop()
        run.real_seconds = time.perf_counter() - started


# -- the report ------------------------------------------------------------------------


def share(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.0f}%" if whole else "-"


COLUMNS = ("tokens", "reread_one_slot", "reread_own_slot", "least", "broke")


def cell(rows: list[Row], filled: list[Row], what: str) -> str:
    """A column's figure over `rows`, and in brackets over `filled` (when any)."""
    cells = []
    for group in (rows, filled) if filled else (rows,):
        whole = sum(r.tokens for r in group)
        if what == "tokens":
            cells.append(f"{whole:,}")
        elif what == "broke":
            cells.append(f"{sum(r.broke for r in group)} of {len(group)}")
        else:
            cells.append(share(sum(getattr(r, what) for r in group), whole))
    return cells[0] + (f" ({cells[1]})" if len(cells) > 1 else "")


def table(runs: list[Run]) -> list[str]:
    head = (
        "| window | mode | turns | chat requests | tokens | one slot | own slot | least "
        "| summaries | filled | broke | changed first |"
    )
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for run in runs:
        chats = [r for r in run.rows if r.kind == "chat"]
        later = chats[1:]
        broken = [r for r in later if r.broke]
        filled = later[later.index(broken[0]) :] if broken else []
        summaries = [r for r in run.rows if r.kind == "summary"]
        changes = Counter(r.first_change for r in later if r.changed).most_common()

        figures = {what: cell(later, filled, what) for what in COLUMNS}
        lines.append(
            f"| {run.window} | {run.mode} | {run.turns} | {len(chats)} | {figures['tokens']} "
            f"| {figures['reread_one_slot']} | {figures['reread_own_slot']} "
            f"| {figures['least']} "
            f"| {len(summaries)} ({sum(r.tokens for r in summaries):,} tokens) "
            f"| {broken[0].turn if broken else '-'} | {figures['broke']} "
            f"| {', '.join(f'{label} {n}' for label, n in changes) or '-'} |"
        )
    return lines


def median_s(rows: list[Row]) -> str:
    seconds = [r.real_s for r in rows if r.real_s is not None]
    return f"{statistics.median(seconds):.1f} s" if seconds else "-"


def real_table(runs: list[Run]) -> list[str]:
    head = (
        "| window | model | tokens | re-read | least | to first token, before filled "
        "| after | summaries read | replay |"
    )
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for run in runs:
        if not run.real_model:
            continue
        chats = [r for r in run.rows if r.kind == "chat"]
        later = chats[1:]
        broken = [r for r in later if r.broke]
        filled = later[later.index(broken[0]) :] if broken else []
        before = [r for r in later if r not in filled]
        cells = []
        for what in ("tokens", "read", "least"):
            parts = []
            for group in (later, filled) if filled else (later,):
                whole = sum((r.real_cached or 0) + (r.real_read or 0) for r in group)
                if what == "tokens":
                    parts.append(f"{whole:,}")
                elif what == "read":
                    parts.append(share(sum(r.real_read or 0 for r in group), whole))
                else:  # the least share by this script's rule, for comparison
                    parts.append(share(sum(r.least for r in group), sum(r.tokens for r in group)))
            cells.append(parts[0] + (f" ({parts[1]})" if len(parts) > 1 else ""))
        summaries = [r for r in run.rows if r.kind == "summary"]
        lines.append(
            f"| {run.window} | {run.real_model} | {cells[0]} | {cells[1]} | {cells[2]} "
            f"| {median_s(before)} | {median_s(filled)} "
            f"| {sum(r.real_read or 0 for r in summaries):,} | {run.real_seconds:.0f} s |"
        )
    return lines


def show_examples(run: Run) -> list[str]:
    out: list[str] = []
    for ex in run.examples:
        out.append(f"window {run.window}, {run.mode}: turn {ex.turn}, first change in {ex.label}")
        out += [f"    {line}" for line in ex.diff]
    return out


async def main_async(args: argparse.Namespace) -> list[Run]:
    windows = args.window or list(DEFAULT_WINDOWS)
    modes = ["inproc", "cli"] if args.mode == "both" else [args.mode]
    runs = []
    for window in windows:
        turns = args.turns or (40 if window <= 2048 else 60)
        for mode in modes:
            run, bodies = await one_run(window, mode, turns, args)
            print(f"window {window}, {mode}: {turns} turns in {run.seconds:.0f} s", flush=True)
            runs.append(run)
            if args.real and mode == modes[0]:  # one llama-server at a time
                await asyncio.to_thread(replay, run, bodies, Path(args.real_model))
                print(f"  replayed on llama-server in {run.real_seconds:.0f} s", flush=True)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["inproc", "cli", "both"], default="both")
    parser.add_argument(
        "--window", type=int, action="append", help="context window (repeat; default 2048, 8192)"
    )
    parser.add_argument("--turns", type=int, default=0, help="default 40 at 2048, 60 above")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--examples", type=int, default=1, help="breaks shown as a diff per run")
    parser.add_argument("--json-out", help="write every request's row here")
    parser.add_argument(
        "--locomo", metavar="CONV", help="play a LoCoMo dev conversation's lines (conv-41)"
    )
    parser.add_argument(
        "--fold-to", type=float, default=None, help="[memory] fold_to (default: newt's)"
    )
    parser.add_argument(
        "--real", action="store_true", help="replay each window's requests on llama-server"
    )
    parser.add_argument("--real-model", default=str(cache_dir() / REAL_MODEL), help="GGUF")
    args = parser.parse_args()
    started = time.perf_counter()
    runs = asyncio.run(main_async(args))
    print()
    print(f"Prefix reuse (seed {args.seed}, {time.perf_counter() - started:.0f} s in all)")
    print("\n".join(table(runs)))
    if args.real:
        print()
        print("\n".join(real_table(runs)))
    for run in runs:
        lines = show_examples(run)
        if lines:
            print()
            print("\n".join(lines))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps([asdict(r) for r in runs], indent=1))


if __name__ == "__main__":
    main()
