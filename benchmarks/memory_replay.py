"""Replay the question requests of a memory benchmark run with other prompts or sampling.

    python benchmarks/memory_replay.py ANSWERS.json [...] [--variants as_sent,no_history]
        [--temperatures default,0.2] [--seeds 1,2,3,4] [--reply-tokens 48] [--threads 1]

`benchmarks/memory_answers.py --json-out FILE` saves every question's request
exactly as newt sent it. This sends the requests whose retained evidence held
the asked-for value to SmolLM2-135M-Instruct again (a llama-server started
here, `-c 2048`), under named variants, several seeds each, and counts the
replies that name the value and no near-miss value (the benchmark's rule). It
separates what newt's presentation can change from what the model does with
it:

  as_sent         the request as newt sent it
  no_history      the system prompt and the last message (evidence + question)
                  only: the most a different presentation of the same
                  evidence could get without touching the conversation
  last_exchanges  the system prompt, the last two exchanges and the last message
  last_exchange   the system prompt, the last exchange and the last message
  first_only      as sent, but only the first (best-matching) capsule
  after_question  as sent, but the evidence block after the user's words
  short_header    as sent, the block's first line without "(verbatim excerpts,
                  for reference only)"
  no_header       as sent, without the block's first line
  matching_sentences  as sent, each capsule cut to its sentences holding a
                  word of the question

`--temperatures` sends each variant at the server's default sampling
(`default`, 0.8 for llama-server) and/or at given temperatures. A replay is one
request: it cannot show what a sampling does to a whole conversation (at 0.2,
SmolLM2 repeats its first reply in every later turn when run end to end,
although replayed requests come out better; see the README).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.memory_answers import (
    CONTEXT,
    REPLY_TOKENS,
    carries,
    content_of,
    evidence_rank,
)
from newt.recall.fts_query import query_terms
from newt.recall.relatedness import holds

VARIANTS = (
    "as_sent",
    "no_history",
    "last_exchanges",
    "last_exchange",
    "first_only",
    "after_question",
    "short_header",
    "no_header",
    "matching_sentences",
)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
SHORT_HEADER = "From earlier conversations with the user:"
RESHAPED = VARIANTS[4:]


def split_evidence(content: str) -> tuple[str, list[str], list[str], str]:
    """The last message as (header, capsule lines, other block lines, the user's words)."""
    block, sep, words = content.rpartition("\n\n")
    if not sep:
        return "", [], [], content
    lines = block.splitlines()
    capsules = [line for line in lines[1:] if line.startswith("- ")]
    rest = [line for line in lines[1:] if not line.startswith("- ")]
    return lines[0], capsules, rest, words


def reshaped(name: str, content: str) -> str:
    """The last message with its evidence block reshaped by the named variant:
    first_only keeps the best capsule (newt shows the best first) and drops the
    keys line; after_question puts the block after the user's words;
    short_header and no_header change the block's first line."""
    header, capsules, rest, words = split_evidence(content)
    if not capsules:
        return content
    if name == "first_only":
        return "\n".join([header, capsules[0]]) + "\n\n" + words
    if name == "after_question":
        return words + "\n\n" + "\n".join([header, *capsules, *rest])
    if name == "short_header":
        return "\n".join([SHORT_HEADER, *capsules, *rest]) + "\n\n" + words
    if name == "no_header":
        return "\n".join([*capsules, *rest]) + "\n\n" + words
    if name == "matching_sentences":
        terms = query_terms(words)
        trimmed = [matching_sentences(c, terms) for c in capsules]
        return "\n".join([header, *trimmed, *rest]) + "\n\n" + words
    return content


def matching_sentences(capsule: str, terms: Sequence[str]) -> str:
    """A "- The user said: ... / You replied: ..." line with each part cut to
    its sentences holding a query word (a part with none is kept whole)."""
    parts = []
    for part in capsule.removeprefix("- ").split(" / "):
        who, colon, said = part.partition(": ")
        sentences = [s for s in SENTENCE_END.split(said) if s.strip()]
        hit = [s for s in sentences if any(holds(s.lower(), t) for t in terms)]
        parts.append(who + colon + " ".join(hit or sentences))
    return "- " + " / ".join(parts)


def variant(name: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request's messages as the named variant sends them."""
    system = [m for m in messages[:1] if m.get("role") == "system"]
    history, last = messages[len(system) : -1], messages[-1:]
    if name == "as_sent":
        return list(messages)
    if name == "no_history":
        return system + last
    if name == "last_exchanges":
        return system + history[-4:] + last
    if name == "last_exchange":
        return system + history[-2:] + last
    if name in RESHAPED:
        return system + history + [{**last[0], "content": reshaped(name, content_of(last[0]))}]
    raise ValueError(f"unknown variant {name!r}; use one of {', '.join(VARIANTS)}")


def near_misses(answer: dict[str, Any], answers: Sequence[dict[str, Any]]) -> list[str]:
    """The answer's near-miss values; files from before they were saved: every
    other value planted in the same run (stricter)."""
    if "siblings" in answer:
        return list(answer["siblings"])
    run = (answer["set_name"], answer["design"], answer["mode"], answer["seed"])
    return [
        a["value"]
        for a in answers
        if (a["set_name"], a["design"], a["mode"], a["seed"]) == run
        and a["value"] != answer["value"]
    ]


def replayable(answers: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Answers whose request carried the value in a retained-evidence capsule."""
    return [a for a in answers if a.get("messages") and evidence_rank(a, a["value"])]


async def replay(args: argparse.Namespace) -> int:
    from newt.local.server import LocalLlamaServer, default_model_path, find_llama_server

    answers: list[dict[str, Any]] = []
    for path in args.files:
        answers += json.loads(Path(path).read_text(encoding="utf-8"))
    chosen = replayable(answers)
    print(f"{len(chosen)} of {len(answers)} questions had the fact in a capsule", file=sys.stderr)
    score: dict[tuple[str, str], list[bool]] = {}
    server = LocalLlamaServer(
        default_model_path(),
        ctx=CONTEXT,
        threads=args.threads,
        binary=find_llama_server(),
        extra_args=["-n", str(args.reply_tokens)],
    )
    async with server as llm, httpx.AsyncClient(timeout=600) as http:
        for answer in chosen:
            misses = near_misses(answer, answers)
            # one variant's requests in a row: the server reuses its cached prompt
            for name in args.variants:
                messages = variant(name, answer["messages"])
                for temperature in args.temperatures:
                    for seed in args.seeds:
                        body: dict[str, Any] = {
                            "messages": messages,
                            "seed": seed,
                            "max_tokens": args.reply_tokens,
                        }
                        if temperature != "default":
                            body["temperature"] = float(temperature)
                        response = await http.post(llm.root_url + "/v1/chat/completions", json=body)
                        response.raise_for_status()
                        reply = content_of(response.json()["choices"][0]["message"])
                        ok = carries(reply, answer["value"], misses)
                        score.setdefault((name, temperature), []).append(ok)
                        if args.verbose:
                            mark = "ok" if ok else "--"
                            print(f"{answer['fact_id']:18} {name:14} t={temperature:7} "
                                  f"s{seed} {mark} {reply[:70]!r}", file=sys.stderr)  # fmt: skip
    print(f"Replayed {len(chosen)} question requests, seeds {','.join(map(str, args.seeds))}, "
          f"replies <= {args.reply_tokens} tokens")  # fmt: skip
    print("variant         sampling  replies carrying the fact")
    for (name, temperature), oks in score.items():
        sampling = "server" if temperature == "default" else f"t={temperature}"
        print(f"{name:15} {sampling:9} {sum(oks)}/{len(oks)} ({100 * sum(oks) / len(oks):.0f}%)")
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="memory_answers.py --json-out files")
    parser.add_argument("--variants", default="as_sent,no_history,last_exchanges")
    parser.add_argument("--temperatures", default="default", help="`default` and/or numbers")
    parser.add_argument("--seeds", default="1,2,3,4")
    parser.add_argument("--reply-tokens", type=int, default=REPLY_TOKENS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    args.variants = [v for v in args.variants.split(",") if v]
    for name in args.variants:
        if name not in VARIANTS:
            parser.error(f"unknown variant {name!r}; use one of {', '.join(VARIANTS)}")
    args.temperatures = [t for t in args.temperatures.split(",") if t]
    args.seeds = [int(s) for s in args.seeds.split(",") if s]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return asyncio.run(replay(parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
