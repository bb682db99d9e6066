"""Does a focused question's request get the fact into the reply? Fast, per shape.

    python benchmarks/focused_replies.py [--set dev] [--seeds 1,2,3,4] [--variants as_built]
        [--temperature T] [--threads 2] [-v]

A focused question (newt/agent/focus.py) goes out as the system prompt, the
capsules that answer it in the user's voice, and the question: nothing of the
conversation. So its request can be built without running a conversation:
for every fact of a set of benchmarks/memory_answers.toml, every phrasing,
told plainly, with a lead-in ("Please remember this: ") or inside each longer
"carrier" turn, this builds the capsule of the user's turn and the request
newt would send (its own focus_evidence, evidence_block and system prompt),
sends it to SmolLM2-135M-Instruct (a llama-server started here, `-c 2048`,
replies capped at 48 tokens) at newt's focus temperature (0: one seed says it
all; other temperatures with several seeds), and counts the replies that name
the value.

It reports per wrapper (plain / lead-in / carrier) and per value kind, and the
questions focus_evidence would not focus (those go out with the whole working
set in a real conversation; here they are only counted). It measures what the
model does with one right capsule; memory_answers.py measures the whole path
(recall, focus, the reply) end to end. Tune on `dev` only.

Variants (what the request's capsule holds):
  as_built   the request exactly as newt builds it today
  whole      the capsule is the whole turn (as before sentence trimming)
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.memory_answers import CONTEXT, REPLY_TOKENS, SETS, carries, draw_value, load_data
from newt.agent.conversation_settings import effective_system_prompt
from newt.agent.focus import focus_evidence
from newt.chat_settings import ChatSettings
from newt.config import RecallConfig
from newt.recall.presentation import evidence_block
from newt.recall.retention import EvidenceCapsule, RetentionReport

VARIANTS = ("as_built", "whole")
LEAD_INS = ("Please remember this: ", "Note for later: ")


@dataclass(frozen=True)
class Case:
    fact_id: str
    kind: str
    wrapper: str  # plain, lead-in, carrier1..n
    told: str  # the user's turn
    question: str
    value: str


def cases(set_name: str) -> Iterator[Case]:
    data = load_data()
    for fact in data.sets[set_name]:
        rng = random.Random(f"focused:{fact.id}")
        for statement in fact.statements:
            value = draw_value(fact.kind, rng, set())
            said = statement.format(v=value)
            wrappers = [("plain", said), ("lead-in", rng.choice(LEAD_INS) + said)]
            wrappers += [
                (f"carrier{n}", carrier.format(fact=said))
                for n, carrier in enumerate(data.carriers, 1)
            ]
            for wrapper, told in wrappers:
                yield Case(fact.id, fact.kind, wrapper, told, fact.question, value)


def report_for(case: Case) -> RetentionReport:
    excerpt = f"User: {case.told}"
    capsule = EvidenceCapsule("1", "t1", excerpt, len(excerpt) // 4, 1.0, 1.0, "user")
    return RetentionReport(budget_tokens=512, retained_tokens=capsule.tokens, capsules=[capsule])


def request(case: Case, variant: str) -> list[dict[str, Any]] | None:
    """The focused request newt would send; None when the question would not be focused."""
    report = report_for(case)
    focus = focus_evidence(case.question, report)
    if focus is None:
        return None
    if variant == "whole":
        focus = report
    elif variant != "as_built":
        raise ValueError(f"unknown variant {variant!r}; use one of {', '.join(VARIANTS)}")
    block = evidence_block(focus, keys=False, focused=True)
    system = effective_system_prompt(ChatSettings())
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": block + case.question},
    ]


async def run(args: argparse.Namespace) -> int:
    from newt.backend.local_server import LocalLlamaServer, default_model_path, find_llama_server

    chosen = list(cases(args.set))
    score: dict[tuple[str, str], list[bool]] = {}
    unfocused: list[Case] = []
    server = LocalLlamaServer(
        default_model_path(),
        ctx=CONTEXT,
        threads=args.threads,
        binary=find_llama_server(),
        extra_args=["-n", str(args.reply_tokens)],
    )
    async with server as llm, httpx.AsyncClient(timeout=600) as http:
        for case in chosen:
            for variant in args.variants:
                messages = request(case, variant)
                if messages is None:
                    if variant == args.variants[0]:
                        unfocused.append(case)
                    continue
                for seed in args.seeds:
                    body = {
                        "messages": messages,
                        "seed": seed,
                        "max_tokens": args.reply_tokens,
                        "temperature": args.temperature,
                    }
                    response = await http.post(llm.root_url + "/v1/chat/completions", json=body)
                    response.raise_for_status()
                    reply = response.json()["choices"][0]["message"].get("content") or ""
                    ok = carries(reply, case.value, [])
                    for key in ("all", case.wrapper.rstrip("0123456789"), f"kind:{case.kind}"):
                        score.setdefault((variant, key), []).append(ok)
                    if args.verbose:
                        mark = "ok" if ok else "--"
                        print(f"{case.fact_id:18} {case.wrapper:8} {variant:9} s{seed} "
                              f"{mark} {reply[:80]!r}", file=sys.stderr)  # fmt: skip
    seeds = ",".join(map(str, args.seeds))
    print(f"set {args.set}: {len(chosen)} told/asked pairs, seeds {seeds}, "
          f"t={args.temperature}, replies <= {args.reply_tokens} tokens")  # fmt: skip
    print(f"not focused (would go out with the whole working set): {len(unfocused)}")
    for case in unfocused:
        print(f"  {case.fact_id}: {case.told[:70]!r} / {case.question!r}")
    print("variant    group           replies naming the value")
    for (variant, key), oks in sorted(score.items()):
        print(f"{variant:10} {key:15} {sum(oks)}/{len(oks)} ({100 * sum(oks) / len(oks):.0f}%)")
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", default="dev", choices=SETS)
    parser.add_argument("--seeds", default="1,2,3,4")
    parser.add_argument("--variants", default="as_built")
    parser.add_argument(
        "--temperature",
        type=float,
        default=RecallConfig().focus_temperature,
        help="newt's [recall] focus_temperature by default",
    )
    parser.add_argument("--reply-tokens", type=int, default=REPLY_TOKENS)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    args.variants = [v for v in args.variants.split(",") if v]
    for name in args.variants:
        if name not in VARIANTS:
            parser.error(f"unknown variant {name!r}; use one of {', '.join(VARIANTS)}")
    args.seeds = [int(s) for s in args.seeds.split(",") if s]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return asyncio.run(run(parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
