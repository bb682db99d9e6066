"""One user turn of the agentic loop (DESIGN.md section 4).

    persist the user's words (pending) -> recall evidence -> build_messages
    -> pre-send guard (compact first if the prompt would not fit)
    -> stream the reply, running tools for up to 8 rounds
    -> persist the turn -> sync_turn with the backend's usage
    -> persist any compaction record

On a context-length error the overflow is recorded, the history compacted and
the request retried once. A backend that rejects tools is retried without
them and that is remembered. Cancelling keeps the partial reply (interrupted).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from newt.agent import events as ev
from newt.agent.tools import MAX_TOOL_ROUNDS, TOOL_SCHEMAS, run_tool, tool_call_message
from newt.agent.toolset import tool_handlers
from newt.backend.client import ChatResult, TextDelta
from newt.backend.errors import BackendError, ContextLengthExceededError, ToolsUnsupportedError
from newt.memory import CompactingProvider, MemMessage, TurnMetrics, Usage
from newt.recall import RecallRequest, RetentionReport
from newt.store import make_title

if TYPE_CHECKING:
    from newt.agent.session import ChatSession

log = logging.getLogger(__name__)

# Tokens kept free for the reply when checking that a prompt fits.
REPLY_RESERVE_MAX = 1024


@dataclass
class _Progress:
    reply: str = ""
    tool_events: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int | None = None  # of the first round: the working set + new message
    completion_tokens: int = 0
    cached_tokens: int | None = None
    compactions: list[ev.Compacted] = field(default_factory=list)
    interrupted: bool = False
    compact_reason: str = "budget"
    evidence: str = ""

    def usage(self) -> ev.UsageReported | None:
        if self.prompt_tokens is None:
            return None
        return ev.UsageReported(self.prompt_tokens, self.completion_tokens, self.cached_tokens)


def evidence_block(report: RetentionReport | None) -> str:
    """The capsules as text placed before the user's message in this request only."""
    if report is None or not report.capsules:
        return ""
    lines = [
        "Retained evidence from memory (verbatim excerpts, reference only; "
        "fetch_record(key) returns a record in full):"
    ]
    lines += [f"- [{c.retrieval_key}] {c.excerpt}" for c in report.capsules]
    return "\n".join(lines) + "\n\n"


class TurnRunner:
    def __init__(self, session: ChatSession, text: str) -> None:
        self.s = session
        self.text = text
        self.p = _Progress()

    # -------------------------------------------------------------- the turn

    async def run(self) -> AsyncGenerator[ev.AgentEvent, None]:
        s = self.s
        conv = await s.ensure_conversation()
        turn_id = await s.store.turns.add_pending(conv.id, self.text)
        if not conv.title:
            conv.title = make_title(self.text)  # the store titled it the same way
        yield ev.TurnStarted(turn_id, self.text)
        try:
            async with aclosing(self._request()) as events:
                async for event in events:
                    yield event
        except asyncio.CancelledError:
            await asyncio.shield(self._finish(turn_id, "interrupted"))
            raise
        except GeneratorExit:
            # the consumer closed us (aclose) mid-reply: keep what arrived
            await asyncio.shield(self._finish(turn_id, "interrupted"))
            raise
        except BackendError as exc:
            yield ev.TurnError(exc.message, exc.retryable, type(exc).__name__)
            if self.p.reply:
                # e.g. a malformed chunk mid-reply: keep what arrived, like a cancel
                for compacted in await self._finish(turn_id, "interrupted"):
                    yield compacted
                yield ev.TurnDone(
                    turn_id, self.p.reply, "interrupted", self.p.usage(), self.p.compactions
                )
            else:
                await s.store.turns.fail(turn_id, exc.message)
                yield ev.TurnDone(
                    turn_id, self.p.reply, "failed", self.p.usage(), self.p.compactions
                )
            return
        except Exception as exc:  # a bug or a storage failure: report it, keep the words
            message = f"newt hit an unexpected error ({type(exc).__name__}: {exc})"
            log.debug("turn failed", exc_info=True)  # never a traceback on the screen
            with contextlib.suppress(Exception):
                await s.store.turns.fail(turn_id, message)
            yield ev.TurnError(message, False, type(exc).__name__)
            yield ev.TurnDone(turn_id, self.p.reply, "failed", self.p.usage(), self.p.compactions)
            return
        status = "interrupted" if self.p.interrupted else "complete"
        for compacted in await self._finish(turn_id, status):
            yield compacted
        usage = self.p.usage()
        if usage is not None:
            yield usage
        yield ev.TurnDone(turn_id, self.p.reply, status, usage, self.p.compactions)

    async def _finish(self, turn_id: int, status: str) -> list[ev.Compacted]:
        """Persist the turn, then tell the provider, then persist any compaction record."""
        s, p = self.s, self.p
        # The capsules rode in this request only, so they are not part of the
        # conversation's size: the anchor is the reported prompt without them.
        tokens_in = None
        if p.prompt_tokens is not None:
            tokens_in = max(0, p.prompt_tokens - s.estimate_tokens(p.evidence))
        tokens_out = p.completion_tokens if p.prompt_tokens is not None else None
        await s.store.turns.complete(
            turn_id,
            p.reply,
            status="interrupted" if status == "interrupted" else "complete",
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            tool_events=p.tool_events,
        )
        usage = Usage(tokens_in, tokens_out or 0) if tokens_in is not None else None
        await s.provider.sync_turn(self.text, p.reply, TurnMetrics(usage))
        s.note_resident(f"t{turn_id}")
        if tokens_in is not None:
            await s.remember_estimate()
        compacted = await s.persist_compaction(p.compact_reason)
        if compacted is None:
            return []
        p.compactions.append(compacted)
        return [compacted]

    async def _recall(self) -> RetentionReport | None:
        s = self.s
        budget = s.config.recall.retained_token_budget
        if budget <= 0:
            return None
        response = await s.recall.recall(
            RecallRequest(self.text, limit=8, retained_token_budget=budget),
            exclude_keys=s.resident_keys() | await s.store.notes.record_keys(),
        )
        return response.retained_evidence

    def _build(self) -> list[MemMessage]:
        messages = self.s.provider.build_messages(self.s.system_prompt, self.text)
        if self.p.evidence:
            last = messages[-1]
            messages[-1] = MemMessage(last.role, self.p.evidence + last.content)
        return messages

    async def _request(self) -> AsyncGenerator[ev.AgentEvent, None]:
        s, p = self.s, self.p
        report = await self._recall()
        s.last_retention = report
        if report is not None:
            yield ev.RetainedEvidence(report)
        p.evidence = evidence_block(report)
        messages = self._build()
        if await self._guard(messages):
            # the record is persisted after this turn, which it precedes in the working set
            p.compact_reason = "guard"
            messages = self._build()
        retried = False
        while True:
            try:
                async with aclosing(self._exchange(messages)) as events:
                    async for event in events:
                        yield event
                return
            except ContextLengthExceededError as exc:
                if retried:
                    raise
                retried = True
                await s.record_overflow(exc)
                yield ev.Notice(
                    f"the prompt did not fit the model's context ({exc.message}); "
                    "compacting and retrying"
                )
                reason = "overflow" if await self._shrink_after_overflow(exc) else p.compact_reason
                # start the attempt afresh: usage, tool events and text of the
                # failed attempt describe a prompt that no longer exists
                self.p = p = _Progress(evidence=p.evidence, compact_reason=reason)
                messages = self._build()

    # ------------------------------------------------------------ fitting in

    def _compacting(self) -> tuple[Any, tuple[str, int, int]] | None:
        """The provider's compact_for and its usage, if it can compact on demand."""
        provider = self.s.provider
        usage = provider.usage()
        if not isinstance(provider, CompactingProvider) or usage is None:
            return None
        return provider.compact_for, usage

    async def _guard(self, messages: list[MemMessage]) -> bool:
        """Compact first if prompt + reply reserve would pass the live ceiling.

        `used` counts the system prompt and history once the backend has
        reported a prompt size; before that it counts turns only, so the system
        prompt is added here.
        """
        s = self.s
        compacting = self._compacting()
        if compacting is None:
            return False
        compact_for, usage = compacting
        ceiling, reserve = s.ceiling_and_reserve()
        required = s.estimate_tokens(messages[-1].content) + reserve
        if getattr(s.provider, "last_reported", None) is None:
            required += s.estimate_tokens(messages[0].content)
        if usage[1] + required <= ceiling:
            return False
        await compact_for(required, limit=ceiling)
        return True

    async def _shrink_after_overflow(self, exc: ContextLengthExceededError) -> bool:
        """Fold enough history that the retried prompt fits what the server said.

        Our figure and the server's count differ, so scale: if the server
        counted P tokens where we hold `used`, keeping used * target / P fits.
        """
        s = self.s
        compacting = self._compacting()
        if compacting is None:
            return False
        compact_for, usage = compacting
        ceiling, reserve = s.ceiling_and_reserve()
        target = max(0, ceiling - reserve)
        reported = exc.prompt_tokens or 0
        limit = int(usage[1] * target / reported) if reported > target else usage[1] // 2
        await compact_for(0, limit=limit)
        return s.provider.usage() != usage

    # ------------------------------------------------------------- streaming

    async def _stream(
        self, wire: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> AsyncGenerator[ev.AgentEvent | ChatResult, None]:
        # aclosing: a consumer that stops early must close the HTTP stream at once
        async with aclosing(self.s.client.stream_chat(wire, tools=tools)) as stream:
            async for item in stream:
                if isinstance(item, TextDelta):
                    self.p.reply += item.text
                    yield ev.TextDelta(item.text)
                elif isinstance(item, ChatResult):
                    yield item

    async def _exchange(self, messages: list[MemMessage]) -> AsyncGenerator[ev.AgentEvent, None]:
        """Stream one reply, running tool rounds; raises BackendError on failure."""
        s, p = self.s, self.p
        wire: list[dict[str, Any]] = [{"role": m.role, "content": m.content} for m in messages]
        handlers = tool_handlers(s)
        for round_no in range(MAX_TOOL_ROUNDS + 1):
            use_tools = s.supports_tools is not False and round_no < MAX_TOOL_ROUNDS
            result: ChatResult | None = None
            try:
                tools = TOOL_SCHEMAS if use_tools else None
                async with aclosing(self._stream(wire, tools)) as stream:
                    async for item in stream:
                        if isinstance(item, ChatResult):
                            result = item
                        else:
                            yield item
            except ToolsUnsupportedError:
                await s.record_tools_unsupported()
                yield ev.Notice("this backend does not accept tools; continuing without them")
                async with aclosing(self._stream(wire, None)) as stream:
                    async for item in stream:
                        if isinstance(item, ChatResult):
                            result = item
                        else:
                            yield item
            if result is None:
                return
            if result.usage is not None:
                if p.prompt_tokens is None:
                    p.prompt_tokens = result.usage.prompt_tokens
                    p.cached_tokens = result.usage.cached_tokens
                p.completion_tokens += result.usage.completion_tokens
                await s.record_accepted_prompt(result.usage.prompt_tokens)
            if result.interrupted:
                p.interrupted = True
                yield ev.Notice("the reply stream was cut off; the partial reply is kept")
                return
            if not result.tool_calls:
                return
            wire.append(tool_call_message(result.tool_calls, result.text))
            for call in result.tool_calls:
                yield ev.ToolCallStarted(call.id, call.name, call.arguments)
                outcome = await run_tool(handlers, call.name, call.arguments)
                p.tool_events.append(
                    {
                        "name": call.name,
                        "arguments": call.arguments,
                        "result": outcome.result[:2000],
                        "error": outcome.error,
                    }
                )
                yield ev.ToolCallFinished(call.id, call.name, outcome.result, outcome.error)
                wire.append({"role": "tool", "tool_call_id": call.id, "content": outcome.result})
            if p.reply and not p.reply.endswith("\n"):
                p.reply += "\n\n"
