"""How the session runs a turn (ChatSession owns one; callers use it as
`session.turns`).

A turn waits for a background probe still in flight (it is budgeted for what
the backend said) and for an overdue summary, then passes the session gate and
the conversation's writer lock (another newt writing to it is waited for, and
said so). Inside them: a summary in flight gives way, a log another process
changed is reloaded, the replaced turn of a regenerate or edit leaves the
working set (newt.agent.session.edits), and newt.agent.turn.runner runs the turn
on the TurnContext that TurnRequests builds: everything the turn touches and
nothing else.
After it: the evidence it carried is kept for /memory, a replacement that was
not stored is undone, a note the model corrected rebuilds the working set, and
the summary owed and the embedding of the new turn start.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

from newt.agent import events as ev
from newt.agent.errors import SessionError
from newt.agent.session.background_probe import BackgroundProbe
from newt.agent.session.conversations import Conversations
from newt.agent.session.edits import Edits
from newt.agent.session.model_link import ModelLink
from newt.agent.session.turn_gate import TurnGate
from newt.agent.session.turn_requests import TurnRequests
from newt.agent.turn.runner import TurnRunner
from newt.recall import RetentionReport


class Turns:
    def __init__(
        self,
        gate: TurnGate,
        conversations: Conversations,
        background: BackgroundProbe,
        edits: Edits,
        requests: TurnRequests,
        link: ModelLink,
    ) -> None:
        self.gate = gate
        self.conversations = conversations
        self.background = background
        self.edits = edits
        self.requests = requests
        self.link = link

    async def send(
        self, text: str, *, replace_last: bool = False
    ) -> AsyncGenerator[ev.AgentEvent, None]:
        """Run one user turn (see newt.agent.turn.runner). Cancelling keeps the partial reply.
        `replace_last`: the turn replaces the last one (regenerate with "", edit)."""
        if not text.strip() and not replace_last:
            raise SessionError("the message is empty")
        await self.background.probed()  # the turn is budgeted for what the backend said
        # More than one fold's summary owed: it lands before this request
        # (BackgroundSummary.settle); otherwise preempt() below makes it wait.
        summaries, log = self.conversations.summaries, self.conversations.log
        await summaries.settle(self.link.config.backend.timeout_s)
        async with self.gate:
            waited: list[int | None] = []
            async with self.conversations.writer(waited.append):
                if waited:
                    yield ev.Notice(
                        "another newt was writing to this conversation; continued after it"
                    )
                await summaries.preempt()  # the user's turn goes first
                conv = log.conversation
                if await log.changed_elsewhere() and conv is not None:
                    await self.conversations.load(conv)  # build on what the other one wrote
                text, attached = await self.edits.before_turn(text, replace_last)
                runner = TurnRunner(self.requests.context(attached), text)
                try:
                    async with aclosing(runner.run()) as events:
                        async for event in events:
                            if isinstance(event, ev.RetainedEvidence):
                                self.conversations.last_retention = event.report
                            elif isinstance(event, ev.TurnStarted):
                                await self.requests.conversation_started()
                            elif isinstance(event, ev.TurnDone):
                                self.link.keep_speed(event)
                            yield event
                finally:
                    self.conversations.last_retention = runner.last_retention
                    self.edits.end_replacement()
                    # the model's save_note replaced one
                    await self.conversations.after_correction(self.requests.owned_notes)
        summaries.start()
        self.link.recall_parts.stored()  # the turn (and any record) can be embedded now

    def regenerate(self) -> AsyncGenerator[ev.AgentEvent, None]:
        """Run the last turn's prompt again; the new reply replaces the old turn."""
        return self.send("", replace_last=True)

    def edit_last(self, text: str) -> AsyncGenerator[ev.AgentEvent, None]:
        """Send `text` in place of the last prompt; the new turn replaces the old one."""
        if not text.strip():
            raise SessionError("the message is empty")
        return self.send(text, replace_last=True)

    async def recall_preview(self, text: str) -> tuple[RetentionReport | None, str]:
        """`/recall TEXT`: the capsules a message with this text would carry
        now, and their block as sent (empty: none); nothing is counted."""
        if not text.strip():
            raise SessionError("give the text to look up: /recall TEXT")
        async with self.gate:
            return await TurnRunner(self.requests.context(), text).preview_evidence()
