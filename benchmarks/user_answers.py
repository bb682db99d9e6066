"""A user's life with newt, answered by the model newt installs.

    python benchmarks/user_answers.py [--window N] [--model GGUF] [--home DIR]
        [--ceiling] [--json-out FILE] [--life TOML]

Facts said in passing in ordinary chat across three conversations
(benchmarks/user_answers.toml; `--life` names another, such as the held-out
benchmarks/user_answers_second.toml), one corrected in a later conversation, the
third long enough to fold, all through real `newt --local MODEL -p` processes
(`-c` for each next message) at newt's defaults: the managed llama-server
sampling as the model's publisher ships it, MiniLM in process. Then each
question is asked once, in a new conversation, on a copy of that home (`newt
--local MODEL -p --json`), worded apart from its fact. With `--window N` the home's config
sets `[memory] context_tokens = N` (the pasted drafts grow with it, so the
third conversation folds at any window).

Per question: right when the reply holds a gold answer (case-insensitive);
and whether the reply was a failure a person would see (empty, a tool call
in text, a placeholder, a refusal: newt.non_answers, or a non-zero exit).
`--ceiling` also asks the model the same questions with only the fact's message and the
question in a minimal prompt, on one llama-server: the model's own ceiling.
`--home DIR` keeps (or reuses) the planted home; reused with `--model`, the
same life is asked of another model. The model defaults to the
catalogue's Qwen2.5-Coder-1.5B-Instruct in ~/.cache/newt-llama
(scripts/get_llama_server.sh puts it there). docs/benchmarks.md keeps the
current table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from newt.agent.local.managed_server import model_sampling  # noqa: E402
from newt.local.server import LocalLlamaServer  # noqa: E402
from newt.non_answers import kind_of  # noqa: E402
from tests.support.llama_server import obtain_chat_model, obtain_llama_server  # noqa: E402

DATA = Path(__file__).with_suffix(".toml")
CEILING_SYSTEM = "You are a helpful assistant."
PLANT_TIMEOUT_S = 1800


def load(life: Path) -> dict[str, Any]:
    return tomllib.loads(life.read_text(encoding="utf-8"))


def messages(data: dict[str, Any], window: int) -> list[list[str]]:
    """The conversations' messages with their pasted drafts, grown with the window."""
    paragraphs = data["filler"]["paragraphs"]
    scale = max(1.0, window / 2048)
    out = []
    for conversation in data["conversation"]:
        said = []
        for text in conversation["messages"]:
            while "{filler:" in text:
                start = text.index("{filler:")
                end = text.index("}", start)
                n = math.ceil(int(text[start + 8 : end]) * scale)
                pasted = "\n\n".join(paragraphs[i % len(paragraphs)] for i in range(n))
                text = text[:start] + pasted + text[end + 1 :]
            said.append(text)
        out.append(said)
    return out


def fact_message(data: dict[str, Any], question: dict[str, Any]) -> str:
    conversation, message = str(question["fact"]).split(".")
    return str(data["conversation"][int(conversation)]["messages"][int(message)])


def setup_home(home: Path, model: Path, window: int | None) -> None:
    home.mkdir(parents=True, exist_ok=True)
    lines = ["[backend]", "local = true", f'local_model = "{model}"', "timeout_s = 900"]
    if window:
        lines += ["", "[memory]", f"context_tokens = {window}"]
    (home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


async def newt_p(home: Path, prompt: str, *, resume: bool) -> tuple[int, dict[str, Any], str]:
    """One `newt -p --json` process on `home`: (exit status, its JSON, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "NEWT_"))}
    env["NEWT_HOME"] = str(home)
    argv = [sys.executable, "-m", "newt", "-p", "-", "--json", *(["-c"] if resume else [])]
    proc = await asyncio.create_subprocess_exec(
        *argv, env=env, cwd=ROOT, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(prompt.encode()), PLANT_TIMEOUT_S)
    try:
        payload = json.loads(out.decode() or "{}")
    except ValueError:
        payload = {}
    return proc.returncode or 0, payload, err.decode(errors="replace")


async def plant(home: Path, data: dict[str, Any], window: int) -> list[dict[str, Any]]:
    turns = []
    for said in messages(data, window):
        for n, text in enumerate(said):
            started = time.perf_counter()
            status, payload, err = await newt_p(home, text, resume=n > 0)
            seconds = time.perf_counter() - started
            folds = len(payload.get("compactions") or [])
            turns.append({"status": status, "seconds": seconds, "folds": folds,
                          "reply": payload.get("reply", ""), "error": err[-300:]})  # fmt: skip
            shown = f"{text[:50]!r} -> {payload.get('reply', '')[:60]!r}"
            print(f"  planted ({seconds:.0f} s, exit {status}, {folds} folds): {shown}",
                  file=sys.stderr, flush=True)  # fmt: skip
    return turns


def score(reply: str, gold: list[str]) -> bool:
    return any(g.lower() in reply.lower() for g in gold)


async def ask(home: Path, work: Path, question: dict[str, Any]) -> dict[str, Any]:
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(home, work)
    started = time.perf_counter()
    status, payload, err = await newt_p(work, question["text"], resume=False)
    reply = str(payload.get("reply", ""))
    evidence = payload.get("retained_evidence") or {}
    carried = " ".join(c.get("excerpt", "") for c in evidence.get("capsules", []))
    return {
        "question": question["text"],
        "reply": reply,
        "right": status == 0 and score(reply, question["gold"]),
        "failure": kind_of(reply) or (f"exit {status}" if status else None),
        "fact_in_request": score(carried, question["gold"]),
        "seconds": time.perf_counter() - started,
        "stderr": err[-300:],
    }


async def ceiling(model: Path, data: dict[str, Any]) -> list[dict[str, Any]]:
    binary, _ = obtain_llama_server()
    sampling = model_sampling(model)  # sampled as newt samples it
    more = sampling.server_args() if sampling is not None else []
    server = LocalLlamaServer(model, binary=binary, ctx=2048, extra_args=["-n", "256", *more])
    server.start()
    rows = []
    try:
        async with httpx.AsyncClient(timeout=600) as client:
            for question in data["question"]:
                said = fact_message(data, question)
                body = {"messages": [
                    {"role": "system", "content": CEILING_SYSTEM},
                    {"role": "user", "content": f'Earlier I said: "{said}"\n\n{question["text"]}'},
                ]}  # fmt: skip
                response = await client.post(f"{server.base_url}/chat/completions", json=body)
                reply = str(response.json()["choices"][0]["message"]["content"] or "")
                rows.append({"question": question["text"], "reply": reply,
                             "right": score(reply, question["gold"])})  # fmt: skip
    finally:
        server.stop()
    return rows


async def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    data = load(Path(args.life))
    model = Path(args.model) if args.model else obtain_chat_model()
    window = args.window or 8192
    home = Path(args.home) if args.home else tmp / "home"
    planted: list[dict[str, Any]] = []
    if not (home / "planted").exists():
        setup_home(home, model, args.window)
        planted = await plant(home, data, window)
        (home / "planted").write_text(json.dumps(planted), encoding="utf-8")
    else:  # the same life asked of this model (its config rewritten, the log kept)
        setup_home(home, model, args.window)
        planted = json.loads((home / "planted").read_text(encoding="utf-8"))
    rows = []
    for question in data["question"]:
        row = await ask(home, tmp / "asked", question)
        rows.append(row)
        said = f"{question['text']!r} -> {row['reply'][:90]!r}"
        print(f"  {'RIGHT' if row['right'] else 'wrong'} ({row['seconds']:.0f} s) {said}",
              file=sys.stderr, flush=True)  # fmt: skip
    result: dict[str, Any] = {"window": window, "planted": planted, "questions": rows}
    if args.ceiling:
        result["ceiling"] = await ceiling(model, data)
    return result


def report(result: dict[str, Any]) -> list[str]:
    rows = result["questions"]
    lines = [
        f"window {result['window']}: {sum(r['right'] for r in rows)} of {len(rows)} right,"
        f" {sum(bool(r['failure']) for r in rows)} failures (empty, call as text, placeholder,"
        f" refusal, non-zero exit), fact in the request {sum(r['fact_in_request'] for r in rows)}"
        f" of {len(rows)}; folds while planting:"
        f" {sum(t['folds'] for t in result['planted'])};"
        f" median {sorted(r['seconds'] for r in rows)[len(rows) // 2]:.0f} s a question",
    ]
    if "ceiling" in result:
        right = sum(r["right"] for r in result["ceiling"])
        lines.append(f"ceiling (the fact's message and the question alone): {right} of"
                     f" {len(result['ceiling'])} right")  # fmt: skip
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window", type=int, default=0)
    parser.add_argument("--model", default="")
    parser.add_argument("--home", default="")
    parser.add_argument("--ceiling", action="store_true")
    parser.add_argument("--json-out", default="")
    parser.add_argument("--life", default=str(DATA))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="newt-user-answers-") as tmp:
        result = asyncio.run(run(args, Path(tmp)))
    print("\n".join(report(result)))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
