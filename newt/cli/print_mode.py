"""`newt -p`: one turn, streamed to stdout (or one JSON object with --json).

The model's reasoning is left out unless --show-thinking: then it is printed
first inside `<think>…</think>` (or, with --json, under a `thinking` key).

Exit status: 0 on a reply, 1 when the backend failed (the user's message is
saved and the conversation can be resumed with -c) or the reply was cut off
(the stream broke, or the backend stopped it at its length cap:
`finish_reason` "length"), 2 for bad input.
Whatever way it ends, it ends in bounded time: the session is closed with
`close_within` and cli runs it with `run_bounded` (newt/cli/bounded_exit.py).
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from newt.agent import events as ev
from newt.agent.own_memory.oversize import LARGE_SHARE, too_large
from newt.agent.session.chat_session import ChatSession, MemoryStatus, dump_report
from newt.cli.bounded_exit import close_within
from newt.cli.detached_writers import DetachedWriters
from newt.cli.print_thinking import ThinkingPrinter, speed
from newt.config import Config
from newt.store import Store
from newt.text import StreamSanitizer, strip_terminal_escapes

# How long print mode waits, after the reply is out, for its turn's records
# to be embedded (a few hundred milliseconds once the model is loaded).
EMBED_AT_EXIT_S = 5.0


async def run_print(
    config: Config,
    prompt: str,
    *,
    as_json: bool,
    resume: str | None,
    continue_latest: bool,
    out: TextIO,
    err: TextIO,
    detach_summary: bool = True,
    preset: str | None = None,
    show_thinking: bool = False,
    incognito: bool = False,
) -> int:
    assert config.db_path is not None
    async with await Store.open(config.db_path) as store:
        session = await ChatSession.open(config, store)
        try:
            resumed = None
            if resume:
                await session.conversations.resume(resume)
            elif continue_latest:
                await session.conversations.continue_latest()
            if incognito or (preset and session.settings_controls.find_preset(preset).incognito):
                await go_incognito(session, err)
            if preset:  # `--preset`: its model was chosen with the config
                await session.apply_preset(preset, for_new=True, switch_model=False)
            if session.conversation is not None:
                resumed = session.memory_status()
            status = session.memory_status()
            tokens = session.estimate_tokens(prompt)
            if tokens > status.budget // LARGE_SHARE:  # may not fit: the server's own count
                tokens = await session.count_tokens(prompt)
            why = too_large(prompt, tokens, status, switch="--model")
            if why is not None:  # the server would refuse it after a long wait
                err.write(f"newt: error: not sent: {strip_terminal_escapes(why)}\n")
                return 2
            code = await _one_turn(
                session,
                prompt,
                as_json=as_json,
                out=out,
                err=err,
                resumed=resumed,
                show_thinking=show_thinking,
            )
            # The reply is out: what the session still owes must not hold up the
            # shell's prompt; a detached newt finishes it (or, with a server
            # that dies with us, the session finishes it here).
            out.flush()
            handoff = DetachedWriters(config) if detach_summary else None
            await session.finish_owed(handoff, embed_within_s=EMBED_AT_EXIT_S)
            return code
        finally:
            await close_within(session.close())  # never held up by stuck background work


async def go_incognito(session: ChatSession, err: TextIO) -> None:
    """`--incognito` (or a preset's `incognito = true`): nothing of this
    conversation is written to disk (newt.store.conversation_store). A resumed
    one is deleted from the database before its turn, and stderr says so: the
    user should know what went."""
    if session.unsaved:
        return
    report = await session.forgetting.set_incognito(True)
    if report is None:
        return  # a new conversation: nothing of it was ever stored
    lines = strip_terminal_escapes(report.describe()).splitlines()
    err.write(
        "newt: incognito: nothing of this conversation is saved from now on;"
        f" what was stored of it is gone ({lines[0]})\n"
    )
    for line in lines[1:]:
        err.write(f"newt: {line}\n")
    err.flush()


async def _one_turn(
    session: ChatSession,
    prompt: str,
    *,
    as_json: bool,
    out: TextIO,
    err: TextIO,
    resumed: MemoryStatus | None = None,
    show_thinking: bool = False,
) -> int:
    reply_parts: list[str] = []
    thinking = ThinkingPrinter(out if show_thinking and not as_json else None)
    done: ev.TurnDone | None = None
    error: ev.TurnError | None = None
    compactions: list[ev.Compacted] = []
    wrote_any = False
    sanitizer = StreamSanitizer()
    async for event in session.turns.send(prompt):
        if isinstance(event, ev.ThinkingDelta):
            thinking.write(event.text)
        elif isinstance(event, ev.TextDelta):
            reply_parts.append(event.text)
            thinking.close()
            if not as_json:
                out.write(sanitizer.feed(event.text))
                out.flush()
                wrote_any = True
        elif isinstance(event, ev.Notice):
            err.write(f"newt: {strip_terminal_escapes(event.message)}\n")
        elif isinstance(event, ev.Compacted):
            compactions.append(event)
        elif isinstance(event, ev.TurnError):
            error = event
        elif isinstance(event, ev.TurnDone):
            done = event
    thinking.close()
    if wrote_any:
        out.write(sanitizer.flush() + "\n")
    if error is not None:
        conv = session.conversation
        saved = conv is not None and not session.unsaved
        hint = " Your message is saved; retry with `newt -c -p ...`." if saved else ""
        message = strip_terminal_escapes(error.message).rstrip(". ")
        err.write(f"newt: error: {message}.{hint}\n")
        err.flush()
    if as_json:
        status = session.memory_status()
        usage = done.usage if done else None
        payload: dict[str, Any] = {
            "conversation_id": session.conversation.id if session.conversation else None,
            # nothing of it is stored, indexed or recalled (the id cannot be resumed)
            "incognito": session.incognito,
            "reply": strip_terminal_escapes("".join(reply_parts)),
            "status": done.status if done else "failed",
            # "length": the backend stopped the reply at its cap (exit status 1)
            "finish_reason": done.finish_reason if done else None,
            "usage": {
                "prompt_tokens": usage.prompt_tokens if usage else None,
                "completion_tokens": usage.completion_tokens if usage else None,
                # read from the server's cache, where it says (cached_tokens, cache_n)
                "cached_tokens": usage.cached_tokens if usage else None,
                "tokens_per_second": speed(done),
            },
            # summed over the conversation's replies, this one included
            "conversation_usage": {
                "prompt_tokens": status.total_prompt_tokens,
                "completion_tokens": status.total_completion_tokens,
                "replies": status.total_replies,
                "estimated_replies": status.total_estimated,
            },
            "memory": {
                "provider": status.provider,
                "label": status.label,
                "used": status.used,
                "budget": status.budget,
                "source": status.budget_source,
            },
            # with -c/-r: the figures restored from the durable log, before this turn
            "resumed_memory": None
            if resumed is None
            else {
                "used": resumed.used,
                "budget": resumed.budget,
                "resident_turns": resumed.resident_turns,
            },
            "retained_evidence": dump_report(session.last_retention),
            "error": None
            if error is None
            else {"message": error.message, "kind": error.kind, "retryable": error.retryable},
            "compactions": [
                {"reason": c.reason, "resident_turns": c.resident_turns, "used_after": c.used_after}
                for c in compactions
            ],
        }
        if show_thinking:
            payload["thinking"] = strip_terminal_escapes(done.thinking if done else "")
        # ASCII-only JSON: excerpts quote stored model text, and a raw C1 control
        # character would reach the terminal; \\u escapes keep the data intact
        out.write(json.dumps(payload) + "\n")
    out.flush()
    if error is None and done is not None and done.status == "interrupted":
        # the stream was cut off: the partial reply is printed and saved, but a
        # script must be able to tell it from a whole one
        err.write("newt: error: the reply was cut off; the partial reply is saved.\n")
        return 1
    if error is None and done is not None and done.finish_reason == "length":
        # cut at the reply cap: it reads like a whole reply, so say it is not one
        cap = f" ({done.stats.completion_tokens} tokens)" if done.stats else ""
        err.write(
            f"newt: error: the reply stopped at the length limit{cap}; it is saved as it is."
            " Raise the cap (max reply tokens in /settings, or the server's) for longer replies.\n"
        )
        return 1
    return 0 if error is None else 1
