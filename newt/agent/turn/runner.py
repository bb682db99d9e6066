"""One user turn of the agentic loop (docs/design.md section 3).

    persist the user's words (pending) -> recall evidence -> build_messages
    -> pre-send guard (compact first if the prompt would not fit: turn_fit)
    -> stream the reply, running tools for up to 8 rounds (turn_rounds)
    -> persist the turn -> sync_turn with the backend's usage
    -> persist any compaction record

On a context-length error the overflow is recorded, the history compacted and
the request retried once. A backend that rejects tools is retried without
them and that is remembered. Cancelling keeps the partial reply (interrupted).
The stages share one TurnProgress (newt.agent.turn.context).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import TypeVar

from newt.agent import events as ev
from newt.agent.reply_stats import answer_share
from newt.agent.turn.context import ExtraTools, TurnContext, TurnProgress
from newt.agent.turn.fit import RequestFit
from newt.agent.turn.rescue import save_unsaved_reply
from newt.agent.turn.rounds import ReplyRounds
from newt.backend.errors import (
    BackendError,
    ContextLengthExceededError,
    ImagesUnsupportedError,
)
from newt.errors import NewtError, describe
from newt.memory import MemMessage, TurnMetrics, Usage
from newt.memory.calibration import STEADY
from newt.non_answers import is_answer, kind_of
from newt.recall import RetentionReport
from newt.recall.presentation import Packing

log = logging.getLogger(__name__)
_T = TypeVar("_T")

# Attempts to store a finished turn before the reply is saved to a file instead.
FINISH_ATTEMPTS = 3
# newt's own tool schemas may take at most 1/TOOLS_MAX_SHARE of the conversation's budget.
TOOLS_MAX_SHARE = 3
# A turn that ends with no answer says so, and which way (newt.non_answers); the
# user's words stay in the conversation (ctrl+r / `newt -c -p` asks again).
NO_ANSWER = {
    "empty": "the model gave no answer (an empty reply)",
    "call": "the model wrote a tool call as text instead of an answer",
}

__all__ = ["ExtraTools", "TurnContext", "TurnRunner"]


class TurnRunner:
    def __init__(self, ctx: TurnContext, text: str) -> None:
        self.s = ctx
        self.text = text
        self.p = TurnProgress()
        self.fit = RequestFit(ctx)
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
            said = describe(exc)
            yield ev.TurnError(said, exc.retryable, type(exc).__name__)
            if self.p.reply:
                # e.g. a malformed chunk mid-reply: keep what arrived, like a cancel
                for compacted in await self._finish(turn_id, "interrupted"):
                    yield compacted
                yield self.p.done(turn_id, "interrupted", s.tokens_for)
            else:
                await s.log.fail(turn_id, said)
                yield self.p.done(turn_id, "failed", s.tokens_for)
            return
        except Exception as exc:  # a bug or a storage failure: report it, keep the words
            message = (
                describe(exc)  # one of newt's own (a busy database, say): its own words
                if isinstance(exc, NewtError)
                else f"newt hit an unexpected error ({describe(exc)})"
            )
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
        for notice in await self._tool_verdict():
            yield notice
        status = "interrupted" if self.p.interrupted else "complete"
        # nothing, or a call as text: the user's words are kept (and recalled) as
        # said, the call never as a reply, and the turn says it got no answer
        missing = None if self.p.interrupted else NO_ANSWER.get(kind_of(self.p.reply) or "")
        if missing is not None:
            self.p.reply = ""
        try:
            for compacted in await self._finish(turn_id, status):
                yield compacted
        except Exception as exc:  # the store refused the finished turn
            where = save_unsaved_reply(s.log.store.db.path, turn_id, self.text, self.p.reply)
            log.debug("storing the turn failed", exc_info=True)
            yield ev.TurnError(
                f"the reply could not be stored ({describe(exc)}); "
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
        if missing is not None:
            yield ev.TurnError(missing, False, "NoAnswer")
            status = "failed"
        yield self.p.done(turn_id, status, s.tokens_for)

    async def _tool_verdict(self) -> list[ev.Notice]:
        """A model that misused the tools it was offered (or answered them with a
        call written as text, or nothing) is not offered them again: remembered
        for the model, and said once."""
        p = self.p
        trouble = p.tool_trouble
        if trouble is None and p.tools_offered and not p.interrupted:
            kind = kind_of(p.reply)
            if kind == "call":
                trouble = "wrote a tool call as text instead of answering"
            elif kind == "empty" and p.tool_events:
                trouble = "called tools and then gave no answer"
        if trouble is None or not await self.s.capabilities.record_tool_trouble():
            return []
        return [
            ev.Notice(
                f"the model {trouble}: newt stops offering it tools (memory still rides"
                ' in every request; [backend] tools = "on" offers them anyway)'
            )
        ]

    async def _finish(self, turn_id: int, status: str) -> list[ev.Compacted]:
        """Persist the turn, then tell the provider, then persist any compaction record."""
        s, p = self.s, self.p
        # The capsules (and images) rode in this request only, so they are not part
        # of the conversation's size: the anchor is the reported prompt without them.
        # The block sits inside the user's message, so it costs its content only.
        tokens_in = None
        if p.prompt_tokens is not None:
            evidence = s.content_tokens(p.evidence)
            tokens_in = max(0, p.prompt_tokens - evidence - self.fit.image_tokens())
        # the reasoning never goes back to the model: the memory counts the answer only
        tokens_out = None
        if p.prompt_tokens is not None:
            tokens_out = answer_share(p.completion_tokens, p.reply, p.thinking)
        # a reply that is no answer (a placeholder, cut at the limit) stays in the
        # conversation but is never recalled as something said
        recall_reply = is_answer(p.reply, stopped_for_length=p.finish_reason == "length")
        await _retrying(
            lambda: s.log.complete(
                turn_id,
                p.reply,
                recall_reply=recall_reply,
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
        gathered = await s.evidence.gather(
            self.text,
            s.log.resident_keys(),
            self._fixed_tokens(),
            packing=self._packing(),
            count_hits=False,
        )
        return gathered.report, gathered.block

    def _fixed_tokens(self) -> int:
        """What the system prompt as sent (with the notes) and the tool schemas
        take, in the evidence's steady unit (`STEADY`)."""
        system = self._build()[0].content
        return STEADY.tokens_for(system) + self.fit.all_schema_tokens(STEADY.tokens_for)

    def _packing(self) -> Packing:
        """How this request counts and reads its evidence block: in the steady
        unit (`newt.memory.calibration.STEADY`), not the fit learned so far,
        so the same conversation gets the same block in every front end (a
        `newt -c -p` process sees one report; the app, many)."""
        s = self.s
        conversation = s.log.conversation
        return Packing(
            count=STEADY.content_tokens,
            fetchable=self.fit.can_fetch_records(),
            conversation_id=conversation.id if conversation is not None else "",
        )

    def _memory_tools_fit(self) -> bool:
        """Whether newt's own tools leave the conversation room: over a third of
        what it may fill (a small window) they do not, and are not offered this
        turn; memory rides in the request anyway (`[backend] tools = "on"`
        offers them; an MCP server's tools, the user's choice, always go)."""
        usage = self.s.provider.usage()
        if usage is None or self.s.capabilities.config.backend.tools != "auto":
            return True
        return self.fit.all_schema_tokens() * TOOLS_MAX_SHARE <= usage[2]

    async def _request(self) -> AsyncGenerator[ev.AgentEvent, None]:
        s, p = self.s, self.p
        if not self._memory_tools_fit():
            s.tool_schemas, s.tools = [], {}
        if s.tool_schemas:  # newt's own llama-server: does this model call tools at all?
            await s.capabilities.probe_tools(s.client, s.system_prompt)
        if s.extra_tools is not None and s.capabilities.supports_tools is not False:
            # after TurnStarted: the user's words are stored before any server starts
            for message in await s.extra_tools.prepare():
                yield ev.Notice(message)
            s.tools = {**s.tools, **s.extra_tools.handlers()}
            s.tool_schemas = [*s.tool_schemas, *s.extra_tools.schemas()]
        gathered = await s.evidence.gather(
            self.text, s.log.resident_keys(), self._fixed_tokens(), packing=self._packing()
        )
        report, p.evidence = gathered.report, gathered.block
        self.last_retention = report
        if report is not None:
            yield ev.RetainedEvidence(report)
        messages = self._build()
        if await self.fit.guard(messages):
            # the record is persisted after this turn, which it precedes in the working set
            p.compact_reason = "guard"
            messages = self._build()
            if p.evidence and not self.fit.fits(messages):
                # even an empty history leaves no room: the capsules must not overflow
                p.evidence = ""
                messages = self._build()
        retried = False
        while True:
            try:
                async with aclosing(ReplyRounds(s, p).exchange(messages)) as events:
                    async for event in events:
                        yield event
                return
            except ContextLengthExceededError as exc:
                if retried:
                    raise
                retried = True
                await s.capabilities.record_overflow(exc)
                yield ev.Notice(
                    f"the prompt did not fit the model's context ({describe(exc)}); "
                    "compacting and retrying"
                )
                reason = (
                    "overflow" if await self.fit.shrink_after_overflow(exc) else p.compact_reason
                )
                # start the attempt afresh: usage, tool events and text of the
                # failed attempt describe a prompt that no longer exists
                self.p = p = TurnProgress(evidence=p.evidence, compact_reason=reason)
                messages = self._build()


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
