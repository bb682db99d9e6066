"""How close is newt's fullness figure to what the backend really holds?

    python benchmarks/fullness_accuracy.py [--turns 40] [--seed 7] [--no-summarizer]
                                           [--base-url URL]

Starts llama-server (scripts/get_llama_server.sh builds it once) with
`-c 2048 -np 1 -t 2`, unless --base-url points at a running one, and drives a
conversation of varied user messages (prose, code, JSON, accented text)
through a TokenBudget small enough to prune several times, with the real
backend as summarizer. After every turn it compares fullness figures with
the truth: the server's token count (/apply-template + /tokenize) of the
working set the next request carries before the new message (system prompt,
compaction record, resident turns), i.e. the next request's prompt_tokens
minus the new message's own tokens. That identity is checked on every
request (column "chk" = next prompt_tokens - truth - own tokens; 0 is right).
The estimate starts uncalibrated (a fresh Calibrator) on turn 1.

Columns (error in % of the truth):
  anchored  newt's `used`: last prompt_tokens + calibrated estimate of changes
            (ratio: learned chars per token; glue: learned template tokens
            per prompt-side message / per reply)
  plain     the same anchoring with the plain chars/4 estimate
  c/4 sum   unanchored: chars/4 of everything resident
  naive     sum of input+output tokens over all turns (an old bug: each turn is
            counted again in every later reading)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from newt.memory import (
    Calibrator,
    MemMessage,
    TokenBudget,
    TurnMetrics,
    Usage,
)
from newt.resources import asset_text

TARGET_PCT = 3.0
CONTEXT = 2048
THRESHOLD = 0.5  # budget 1,024 tokens: room for a long message and the reply
REPLY_TOKENS = 60
SUMMARY_TOKENS = 120

# -- the conversation ---------------------------------------------------------

PROSE = [
    "I am planning a trip to the mountains next month and I would like some advice on packing.",
    "My team keeps arguing about whether we should rewrite the billing service or keep patching.",
    "Can you explain, in simple words, how a hash table handles collisions "
    "and why resizing matters?",
    "Yesterday the build broke three times because somebody pushed a migration without tests.",
    "Please remember that my daughter's name is Ada and she turns seven "
    "on the fourteenth of March.",
    "The quarterly report shows revenue of 4.2 million, up 12 percent, "
    "but churn rose to 3.1 percent.",
    "I'd like a short poem about a lighthouse keeper who talks to the seagulls every evening.",
    "What are the trade-offs between SQLite in WAL mode and a client-server "
    "database for a desktop app?",
]
ACCENTED = [
    "Olá! Você poderia me ajudar a traduzir esta frase? «A ação não é a única solução possível.»",
    "Je voudrais réserver une chambre à l'hôtel près de la gare de Lyon "
    "pour le 3 août, s'il vous plaît.",
    "¿Dónde está la estación de autobuses? Necesito llegar a Córdoba antes del mediodía, señor.",
    "Die Größe der Datei überschreitet das Maß; könnten Sie sie bitte "
    "für mich verkleinern, Herr Müller?",
    "Ærlig talt, jeg forstår ikke hvorfor søknaden min ble avvist "
    "på grunn av én manglende signatur.",
    "Çok teşekkür ederim, yarın İstanbul'da görüşmek üzere; lütfen dosyaları unutmayın.",
]


def _code(rng: random.Random) -> str:
    name = rng.choice(["parse_config", "merge_intervals", "fetch_user", "retry_call", "load_rows"])
    arg = rng.choice(["items", "path", "payload", "records"])
    n = rng.randint(2, 5)
    lines = [f"def {name}({arg}: list[dict], limit: int = {rng.randint(3, 99)}) -> dict:"]
    for i in range(n):
        lines.append(f"    value_{i} = {arg}[{i}].get('key_{i}', {rng.randint(0, 500)})")
        lines.append(f"    if value_{i} > limit:  # clamp to the limit")
        lines.append(f"        value_{i} = limit")
    lines.append("    return {" + ", ".join(f"'v{i}': value_{i}" for i in range(n)) + "}")
    return "Why does this raise a KeyError sometimes?\n```python\n" + "\n".join(lines) + "\n```"


def _json(rng: random.Random) -> str:
    obj = {
        "id": rng.randint(1000, 99999),
        "name": rng.choice(["Zoë Brontë", "José Álvarez", "Ana Lúcia", "Bob"]),
        "tags": rng.sample(["alpha", "beta", "gamma", "delta", "épsilon", "ζ"], 3),
        "scores": [round(rng.random() * 100, 2) for _ in range(rng.randint(2, 6))],
        "address": {
            "city": rng.choice(["Zürich", "São Paulo", "Kraków"]),
            "zip": str(rng.randint(10000, 99999)),
        },
        "active": rng.random() > 0.5,
    }
    text = json.dumps(obj, ensure_ascii=False, indent=rng.choice([None, 2]))
    return "Validate this JSON and tell me what is wrong:\n" + text


def user_messages(count: int, seed: int = 7) -> list[str]:
    """Deterministic, varied user messages: prose, code, JSON, accented text."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        kind = i % 4
        if kind == 0:
            out.append(" ".join(rng.sample(PROSE, rng.randint(1, 4))))
        elif kind == 1:
            out.append(_code(rng))
        elif kind == 2:
            out.append(_json(rng))
        else:
            out.append(" ".join(rng.sample(ACCENTED, rng.randint(1, 3))))
    return out


# -- talking to llama-server --------------------------------------------------


def _wire(messages: Sequence[MemMessage]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


class Server:
    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def chat(self, messages: Sequence[MemMessage], max_tokens: int) -> tuple[str, Usage]:
        body = {
            "messages": _wire(messages),
            "max_tokens": max_tokens,
            "temperature": 0,
            "seed": 1,
        }
        r = await self.http.post("/v1/chat/completions", json=body)
        r.raise_for_status()
        data = r.json()
        usage = data["usage"]
        text = data["choices"][0]["message"].get("content") or ""
        return text, Usage(usage["prompt_tokens"], usage["completion_tokens"])

    async def count(self, messages: Sequence[MemMessage]) -> int:
        """Tokens of the templated prompt, as the server counts prompt_tokens."""
        r = await self.http.post("/apply-template", json={"messages": _wire(messages)})
        r.raise_for_status()
        prompt = r.json()["prompt"]
        r = await self.http.post("/tokenize", json={"content": prompt, "add_special": True})
        r.raise_for_status()
        return len(r.json()["tokens"])


# -- figures -----------------------------------------------------------------


def chars4(text: str) -> int:
    return math.ceil(len(text) / 4)


@dataclass
class Row:
    turn: int
    resident: int
    compactions: int
    truth: int
    anchored: int
    plain: int
    chars_sum: int
    naive: int
    ratio: float
    glue: str
    check: int | None = None

    def err(self, value: int) -> float:
        return 100.0 * (value - self.truth) / self.truth


def glue(provider: TokenBudget) -> str:
    """The learned glue per prompt-side message / per reply, in tokens."""
    cal = provider.calibrator
    return f"{cal.per_message_tokens:.0f}/{cal.per_reply_tokens:.0f}" if cal else "-"


def _history(messages: list[MemMessage]) -> list[MemMessage]:
    """The working set part of build_messages() output (drop system and new task)."""
    return messages[1:-1]


async def run(server: Server, args: argparse.Namespace) -> list[Row]:
    system = asset_text("system_prompt.md")

    async def summarize(messages: list[MemMessage]) -> str:
        text, _ = await server.chat(messages, SUMMARY_TOKENS)
        return text

    provider = TokenBudget(CONTEXT, args.threshold).with_calibration(Calibrator())
    if not args.no_summarizer:
        provider.with_summarizer(summarize)

    rows: list[Row] = []
    naive = 0
    for i, user in enumerate(user_messages(args.turns, args.seed), 1):
        sent = provider.build_messages(system, user)
        before = _history(sent)
        reply, usage = await server.chat(sent, REPLY_TOKENS)
        if rows:  # this request's size is the truth check of the previous row
            own = await server.count(sent) - await server.count(sent[:-1])
            rows[-1].check = usage.input_tokens - rows[-1].truth - own
        naive += usage.input_tokens + usage.output_tokens
        await provider.sync_turn(user, reply, TurnMetrics(usage))
        provider.take_compaction_record()  # the app would persist it here

        after = _history(provider.build_messages(system, ""))
        # The same anchoring with chars/4 for everything changed since the report.
        sent_chars = sum(chars4(m.content) for m in before) + chars4(user)
        plain = usage.input_tokens + sum(chars4(m.content) for m in after) - sent_chars
        rows.append(
            Row(
                turn=i,
                resident=provider.resident_turns(),
                compactions=provider.compactions,
                truth=await server.count([MemMessage("system", system), *after]),
                anchored=provider.used,
                plain=plain,
                chars_sum=chars4(system) + sum(chars4(m.content) for m in after),
                naive=naive,
                ratio=provider.estimation.chars_per_token,
                glue=glue(provider),
            )
        )
        print(f"turn {i:2d} done", file=sys.stderr, end="\r")
    return rows


def report(rows: list[Row]) -> bool:
    head = (
        f"{'turn':>4} {'res':>3} {'cmp':>3} {'truth':>5} {'used':>5} {'anchored':>8} "
        f"{'plain':>6} {'c/4 sum':>7} {'naive':>7} {'ratio':>5} {'glue':>5} {'chk':>3}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        chk = "" if r.check is None else str(r.check)
        print(
            f"{r.turn:>4} {r.resident:>3} {r.compactions:>3} {r.truth:>5} {r.anchored:>5} "
            f"{r.err(r.anchored):>+7.1f}% {r.err(r.plain):>+5.1f}% {r.err(r.chars_sum):>+6.1f}% "
            f"{r.err(r.naive):>+6.0f}% {r.ratio:>5.2f} {r.glue:>5} {chk:>3}"
        )

    def worst(values: list[float]) -> float:
        return max(abs(v) for v in values)

    anchored = [r.err(r.anchored) for r in rows]
    print()
    print(f"turns: {len(rows)}, compactions: {rows[-1].compactions}")
    for name, errs in (
        ("anchored (calibrated)", anchored),
        ("anchored (plain chars/4 delta)", [r.err(r.plain) for r in rows]),
        ("unanchored chars/4 sum", [r.err(r.chars_sum) for r in rows]),
        ("naive input+output sum", [r.err(r.naive) for r in rows]),
    ):
        mean = sum(abs(e) for e in errs) / len(errs)
        print(f"{name:>31}: worst {worst(errs):6.1f}%  mean |err| {mean:6.1f}%")
    ok = worst(anchored) <= TARGET_PCT
    print(
        f"target: anchored within {TARGET_PCT:g}% of the truth at every turn: "
        f"{'MET' if ok else 'NOT MET'}"
    )
    return ok


async def main_async(args: argparse.Namespace) -> bool:
    if args.base_url:
        async with httpx.AsyncClient(base_url=args.base_url, timeout=300) as http:
            return report(await run(Server(http), args))

    from newt.local.server import LocalLlamaServer

    async with (
        LocalLlamaServer(args.model, ctx=CONTEXT, binary=args.binary) as llama,
        httpx.AsyncClient(base_url=llama.root_url, timeout=300) as http,
    ):
        return report(await run(Server(http), args))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7, help="varies the user messages")
    parser.add_argument("--threshold", type=float, default=THRESHOLD, help="budget share")
    parser.add_argument("--no-summarizer", action="store_true", help="fallback records only")
    parser.add_argument("--base-url", help="a running llama-server (root URL, no /v1)")
    parser.add_argument("--binary", help="llama-server executable")
    parser.add_argument("--model", help="GGUF model file")
    ok = asyncio.run(main_async(parser.parse_args()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
