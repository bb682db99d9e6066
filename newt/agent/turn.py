"""One user turn of the agentic loop (docs/design.md section 3).

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
import json
import logging
import sqlite3
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from newt.agent import events as ev
from newt.agent.capability_tracker import CapabilityTracker
from newt.agent.conversation_log import ConversationLog
from newt.agent.evidence import EvidenceSource
from newt.agent.reply_stats import ReplyClock, ReplyStats, answer_share
from newt.agent.rescue import save_unsaved_reply
from newt.agent.tools import (
    MAX_TOOL_ROUNDS,
    TOOL_SCHEMAS,
    ToolHandler,
    cap_result,
    run_tool,
    tool_call_message,
)
from newt.agent.turn_attachments import TurnAttachments
from newt.backend.client import ChatClient, ChatResult, TextDelta
from newt.backend.errors import (
    BackendError,
    ContextLengthExceededError,
    ImagesUnsupportedError,
    ToolsUnsupportedError,
)
from newt.backend.types import ThinkingDelta
from newt.chat_settings import ChatSettings
from newt.memory import CompactingProvider, MemMessage, MemoryProvider, TurnMetrics, Usage
from newt.memory.capabilities import Anchored
from newt.recall import RetentionReport
from newt.recall.presentation import fit_block

log = logging.getLogger(__name__)
_T = TypeVar("_T")

# A tool result may take at most this share of the context window.
TOOL_RESULT_WINDOW_SHARE = 0.25
# Attempts to store a finished turn before the reply is saved to a file instead.
FINISH_ATTEMPTS = 3


@dataclass
class TurnContext:
    """Everything one turn touches, and nothing else of the session."""

    log: ConversationLog
    provider: MemoryProvider
    evidence: EvidenceSource
    client: ChatClient
    capabilities: CapabilityTracker
    tools: dict[str, ToolHandler]
    system_prompt: str
    tokens_for: Callable[[str], int]
    """The provider's (possibly calibrated) estimate of one message."""
    tool_schemas: list[dict[str, Any]] = field(default_factory=lambda: list(TOOL_SCHEMAS))
    extra_tools: ExtraTools | None = None
    """MCP servers' tools: started once the turn is persisted, then offered beside ours."""
    settings: ChatSettings = field(default_factory=ChatSettings)
    """The conversation's own parameters (sent when set) and reply cap (the reserve)."""
    attachments: TurnAttachments | None = None
    """Image parts of the new message (this request only) and what the backend teaches."""


class ExtraTools(Protocol):
    """Tools from outside newt (newt.agent.mcp_tools.McpTools)."""

    reported_schema_tokens: int
    """Tokens of these schemas inside the prompt size the backend last reported."""

    async def prepare(self) -> list[str]: ...  # start what is needed; notices for the user
    def schemas(self) -> list[dict[str, Any]]: ...
    def handlers(self) -> dict[str, ToolHandler]: ...


@dataclass
class _Progress:
    reply: str = ""
    thinking: str = ""  # the model's reasoning: stored and shown, never sent back
    clock: ReplyClock = field(default_factory=ReplyClock)
    prompt_estimate: int | None = None  # of the first round, for a backend without usage
    tool_events: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int | None = None  # of the first round: the working set + new message
    completion_tokens: int = 0
    cached_tokens: int | None = None
    compactions: list[ev.Compacted] = field(default_factory=list)
    interrupted: bool = False
    finish_reason: str | None = None  # of the last round: "length" when cut at the cap
    compact_reason: str = "budget"
    evidence: str = ""
    recallable: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)

    def usage(self) -> ev.UsageReported | None:
        if self.prompt_tokens is None:
            return None
        return ev.UsageReported(self.prompt_tokens, self.completion_tokens, self.cached_tokens)

    def stats(self, tokens_for: Callable[[str], int]) -> ReplyStats:
        """The footer's figures: the backend's report, else newt's estimate."""
        seconds = self.clock.seconds or None
        cut = self.finish_reason == "length"
        if self.prompt_tokens is not None:
            return ReplyStats(
                self.prompt_tokens, self.completion_tokens, seconds, stopped_for_length=cut
            )
        completion = tokens_for(self.thinking + self.reply) if self.thinking or self.reply else 0
        return ReplyStats(
            self.prompt_estimate, completion, seconds, estimated=True, stopped_for_length=cut
        )

    def done(self, turn_id: int, status: str, tokens_for: Callable[[str], int]) -> ev.TurnDone:
        return ev.TurnDone(
            turn_id,
            self.reply,
            status,
            self.usage(),
            self.compactions,
            thinking=self.thinking.strip(),
            stats=self.stats(tokens_for),
            finish_reason=self.finish_reason,
        )


class TurnRunner:
    def __init__(self, ctx: TurnContext, text: str) -> None:
        self.s = ctx
        self.text = text
        self.p = _Progress()
        self.last_retention: RetentionReport | None = None

    # -------------------------------------------------------------- the turn

    async def run(self) -> AsyncGenerator[ev.AgentEvent, None]:
        s = self.s
        turn_id = await s.log.begin(self.text)
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
            if isinstance(exc, ImagesUnsupportedError) and s.attachments is not None:
                exc.message = await s.attachments.rejected(exc)
            yield ev.TurnError(exc.message, exc.retryable, type(exc).__name__)
            if self.p.reply:
                # e.g. a malformed chunk mid-reply: keep what arrived, like a cancel
                for compacted in await self._finish(turn_id, "interrupted"):
                    yield compacted
                yield self.p.done(turn_id, "interrupted", s.tokens_for)
            else:
                await s.log.fail(turn_id, exc.message)
                yield self.p.done(turn_id, "failed", s.tokens_for)
            return
        except Exception as exc:  # a bug or a storage failure: report it, keep the words
            message = f"newt hit an unexpected error ({type(exc).__name__}: {exc})"
            log.debug("turn failed", exc_info=True)  # never a traceback on the screen
            if self.p.reply:  # the streamed text must not vanish with the error
                where = save_unsaved_reply(s.log.store.db.path, turn_id, self.text, self.p.reply)
                if where is not None:
                    message += f"; the reply was saved to {where}"
            with contextlib.suppress(Exception):
                await s.log.fail(turn_id, message)
            yield ev.TurnError(message, False, type(exc).__name__)
            yield self.p.done(turn_id, "failed", s.tokens_for)
            return
        status = "interrupted" if self.p.interrupted else "complete"
        try:
            for compacted in await self._finish(turn_id, status):
                yield compacted
        except Exception as exc:  # the store refused the finished turn
            where = save_unsaved_reply(s.log.store.db.path, turn_id, self.text, self.p.reply)
            log.debug("storing the turn failed", exc_info=True)
            yield ev.TurnError(
                f"the reply could not be stored ({type(exc).__name__}: {exc}); "
                + (f"it was saved to {where}" if where else "it is shown above only"),
                False,
                type(exc).__name__,
            )
            yield self.p.done(turn_id, "failed", s.tokens_for)
            return
        if s.attachments is not None:
            with contextlib.suppress(Exception):  # a cache write must not fail the turn
                await s.attachments.accepted()
        usage = self.p.usage()
        if usage is not None:
            yield usage
        yield self.p.done(turn_id, status, s.tokens_for)

    async def _finish(self, turn_id: int, status: str) -> list[ev.Compacted]:
        """Persist the turn, then tell the provider, then persist any compaction record."""
        s, p = self.s, self.p
        # The capsules (and images) rode in this request only, so they are not part
        # of the conversation's size: the anchor is the reported prompt without them.
        tokens_in = None
        if p.prompt_tokens is not None:
            tokens_in = max(0, p.prompt_tokens - s.tokens_for(p.evidence) - self._image_tokens())
        # the reasoning never goes back to the model: the memory counts the answer only
        tokens_out = None
        if p.prompt_tokens is not None:
            tokens_out = answer_share(p.completion_tokens, p.reply, p.thinking)
        await _retrying(
            lambda: s.log.complete(
                turn_id,
                p.reply,
                interrupted=status == "interrupted",
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                tool_events=p.tool_events,
                thinking=p.thinking.strip(),
                stats=p.stats(s.tokens_for),
            )
        )
        if p.recallable:  # results from outside newt: searchable like the turn itself
            with contextlib.suppress(Exception):  # the turn is stored; an index must not fail it
                await _retrying(lambda: s.log.index_tool_results(turn_id, p.recallable))
        usage = Usage(tokens_in, tokens_out or 0) if tokens_in is not None else None
        await s.provider.sync_turn(self.text, p.reply, TurnMetrics(usage))
        if tokens_in is not None:
            with contextlib.suppress(Exception):  # a cache write must not fail the turn
                await s.capabilities.remember_estimate(s.provider)
        compacted = await _retrying(lambda: s.log.persist_compaction(s.provider, p.compact_reason))
        if compacted is None:
            return []
        p.compactions.append(compacted)
        return [compacted]

    def _build(self) -> list[MemMessage]:
        messages = self.s.provider.build_messages(self.s.system_prompt, self.text)
        if self.p.evidence:
            last = messages[-1]
            messages[-1] = MemMessage(last.role, self.p.evidence + last.content)
        return messages

    async def preview_evidence(self) -> tuple[RetentionReport | None, str]:
        """The capsules, and the block as it would be sent, that a message
        with this text would carry now (/recall): nothing is stored or counted."""
        s = self.s
        fixed = s.tokens_for(self._build()[0].content) + self._all_schema_tokens()
        gathered = await s.evidence.gather(
            self.text, s.log.resident_keys(), fixed, count_hits=False
        )
        return fit_block(
            gathered.report,
            gathered.report.budget_tokens if gathered.report is not None else 0,
            keys=self._can_fetch_records(),
            now=gathered.now,
            history_since=gathered.history_since,
        )

    async def _request(self) -> AsyncGenerator[ev.AgentEvent, None]:
        s, p = self.s, self.p
        if s.extra_tools is not None and s.capabilities.supports_tools is not False:
            # after TurnStarted: the user's words are stored before any server starts
            for message in await s.extra_tools.prepare():
                yield ev.Notice(message)
            s.tools = {**s.tools, **s.extra_tools.handlers()}
            s.tool_schemas = [*s.tool_schemas, *s.extra_tools.schemas()]
        system = self._build()[0].content  # as sent: the prompt with the notes
        fixed = s.tokens_for(system) + self._all_schema_tokens()
        gathered = await s.evidence.gather(self.text, s.log.resident_keys(), fixed)
        report, p.evidence = fit_block(
            gathered.report,
            gathered.report.budget_tokens if gathered.report is not None else 0,
            keys=self._can_fetch_records(),
            now=gathered.now,
            history_since=gathered.history_since,
        )
        self.last_retention = report
        if report is not None:
            yield ev.RetainedEvidence(report)
        messages = self._build()
        if await self._guard(messages):
            # the record is persisted after this turn, which it precedes in the working set
            p.compact_reason = "guard"
            messages = self._build()
            if p.evidence and not self._fits(messages):
                # even an empty history leaves no room: the capsules must not overflow
                p.evidence = ""
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
                await s.capabilities.record_overflow(exc)
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
        compacting = self._compacting()
        if compacting is None:
            return False
        compact_for, usage = compacting
        ceiling, required = self._required(messages)
        if usage[1] + required <= ceiling:
            return False
        await compact_for(required, limit=ceiling)
        return True

    def _required(self, messages: list[MemMessage]) -> tuple[int, int]:
        """The live ceiling, and what the new message, tool schemas and the
        reply reserve need on top of the working set."""
        s = self.s
        ceiling, reserve = s.capabilities.ceiling_and_reserve(s.settings.max_tokens)
        required = s.tokens_for(messages[-1].content) + reserve + self._schema_tokens()
        required += self._image_tokens()
        if not isinstance(s.provider, Anchored) or s.provider.last_reported is None:
            required += s.tokens_for(messages[0].content)
        return ceiling, required

    def _image_tokens(self) -> int:
        return self.s.attachments.image_tokens if self.s.attachments is not None else 0

    def _fits(self, messages: list[MemMessage]) -> bool:
        usage = self.s.provider.usage()
        ceiling, required = self._required(messages)
        return usage is None or usage[1] + required <= ceiling

    def _can_fetch_records(self) -> bool:
        """Record keys in the evidence help only a model offered fetch_record."""
        s = self.s
        if s.capabilities.supports_tools is False:
            return False
        return any(t.get("function", {}).get("name") == "fetch_record" for t in s.tool_schemas)

    def _all_schema_tokens(self) -> int:
        """What the tool schemas sent with this request take."""
        s = self.s
        if s.capabilities.supports_tools is False or not s.tool_schemas:
            return 0
        return s.tokens_for(json.dumps(s.tool_schemas))

    def _schema_tokens(self) -> int:
        """Tool schemas count against the window once the backend reported
        nothing yet (a report already includes them), and MCP schemas the
        last report did not carry (a resumed conversation, /tools on)."""
        s = self.s
        if not self._all_schema_tokens():
            return 0
        if isinstance(s.provider, Anchored) and s.provider.last_reported is not None:
            if s.extra_tools is None:
                return 0
            now = s.tokens_for(json.dumps(s.extra_tools.schemas()))
            return max(0, now - s.extra_tools.reported_schema_tokens)
        return self._all_schema_tokens()

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
        ceiling, reserve = s.capabilities.ceiling_and_reserve(s.settings.max_tokens)
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
        options = self.s.settings.request_options()  # only what the conversation set
        p = self.p
        try:
            async with aclosing(self.s.client.stream_chat(wire, tools=tools, **options)) as stream:
                async for item in stream:
                    if isinstance(item, TextDelta):
                        p.clock.tick()
                        p.reply += item.text
                        yield ev.TextDelta(item.text)
                    elif isinstance(item, ThinkingDelta):
                        p.clock.tick()
                        p.thinking += item.text
                        yield ev.ThinkingDelta(item.text)
                    elif isinstance(item, ChatResult):
                        yield item
        finally:
            p.clock.end_round()

    async def _exchange(self, messages: list[MemMessage]) -> AsyncGenerator[ev.AgentEvent, None]:
        """Stream one reply, running tool rounds; raises BackendError on failure."""
        s, p = self.s, self.p
        wire: list[dict[str, Any]] = [{"role": m.role, "content": m.content} for m in messages]
        if p.prompt_estimate is None:
            p.prompt_estimate = sum(s.tokens_for(m.content) for m in messages)
        if s.attachments is not None:
            wire[-1]["content"] = s.attachments.user_content(messages[-1].content)
        for round_no in range(MAX_TOOL_ROUNDS + 1):
            use_tools = s.capabilities.supports_tools is not False and round_no < MAX_TOOL_ROUNDS
            result: ChatResult | None = None
            tools = s.tool_schemas if use_tools and s.tool_schemas else None
            while True:  # once, or again without tools for a backend that refuses them
                try:
                    async with aclosing(self._stream(wire, tools)) as stream:
                        async for item in stream:
                            if isinstance(item, ChatResult):
                                result = item
                            else:
                                yield item
                    break
                except ToolsUnsupportedError:
                    if tools is None:
                        raise
                    tools = None
                    await s.capabilities.record_tools_unsupported()
                    yield ev.Notice("this backend does not accept tools; continuing without them")
            if result is None:
                return
            p.finish_reason = result.finish_reason
            if result.usage is not None:
                if p.prompt_tokens is None:
                    p.prompt_tokens = result.usage.prompt_tokens
                    p.cached_tokens = result.usage.cached_tokens
                    if s.extra_tools is not None:  # what of them this anchor holds
                        carried = s.extra_tools.schemas() if tools else []
                        s.extra_tools.reported_schema_tokens = (
                            s.tokens_for(json.dumps(carried)) if carried else 0
                        )
                p.completion_tokens += result.usage.completion_tokens
                with contextlib.suppress(Exception):  # a cache write must not fail a turn
                    await s.capabilities.record_accepted_prompt(result.usage.prompt_tokens)
            if result.interrupted:
                p.interrupted = True
                yield ev.Notice("the reply stream was cut off; the partial reply is kept")
                return
            if not result.tool_calls:
                return
            wire.append(tool_call_message(result.tool_calls, result.text))
            for call in result.tool_calls:
                yield ev.ToolCallStarted(call.id, call.name, call.arguments)
                outcome = await run_tool(s.tools, call.name, call.arguments)
                if outcome.notice:
                    yield ev.Notice(outcome.notice)
                sent = cap_result(outcome.result, self._result_cap(), s.tokens_for)
                if outcome.recallable:
                    p.recallable.append((call.name, call.arguments, sent))
                p.tool_events.append(
                    {
                        "name": call.name,
                        "arguments": call.arguments,
                        "result": outcome.result[:2000],
                        "error": outcome.error,
                    }
                )
                yield ev.ToolCallFinished(call.id, call.name, outcome.result, outcome.error)
                wire.append({"role": "tool", "tool_call_id": call.id, "content": sent})
            if p.reply and not p.reply.endswith("\n"):
                p.reply += "\n\n"
            if p.thinking and not p.thinking.endswith("\n"):
                p.thinking += "\n\n"

    def _result_cap(self) -> int:
        ceiling, _ = self.s.capabilities.ceiling_and_reserve()
        return max(64, int(ceiling * TOOL_RESULT_WINDOW_SHARE))


async def _retrying(write: Callable[[], Awaitable[_T]]) -> _T:
    """Run a store write, retrying while the database stays locked past its
    busy timeout (another newt holding a long write)."""
    for attempt in range(FINISH_ATTEMPTS):
        try:
            return await write()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if attempt == FINISH_ATTEMPTS - 1:
                raise
            await asyncio.sleep(0.5 * (attempt + 1))
    raise AssertionError("unreachable")
