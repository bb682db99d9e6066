"""The durable log of the conversation a session holds, and what of it is resident.

Owns the conversation row and its turns in the store (append-only apart from
a pending turn being completed), and the retrieval keys of what the working
set holds now: those are excluded from recall, since the model already sees
them.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any, TypeVar

from newt.agent import events as ev
from newt.agent.reply_stats import ReplyStats, TokenTally
from newt.memory import MemoryProvider, recall_text
from newt.store import Conversation, StoredTurn, make_title
from newt.store.conversation_store import ConversationStore
from newt.store.live_log import live_rows

_RESIDENT_STATUSES = ("complete", "interrupted")
_T = TypeVar("_T")


class ConversationLog:
    def __init__(self, store: ConversationStore, *, model: str, base_url: str) -> None:
        self.store = store
        self.model = model
        self.base_url = base_url
        self.conversation: Conversation | None = None
        # Keys of resident ordinary turns, oldest first, one entry per turn (its
        # message and its reply), and of the record at the head of the working
        # set. Kept apart so a fold can never leave an old record's key among
        # the turns' (it would hide a resident turn); kept per turn so a fold
        # keeps the keys of `resident_turns` turns, not of that many records.
        self._turn_keys: list[tuple[str, ...]] = []
        self._record_key: str | None = None
        # (rows, newest id, pending rows) as of our last read or write: another
        # newt appending or completing a turn changes it.
        self._seen: tuple[int, int | None, int] = (0, None, 0)
        self.tally = TokenTally()
        """Tokens summed over the conversation's replies (the /memory total)."""
        # For the next turn only: the turn it replaces (regenerate, edit), marked
        # when the new one is stored, and what its prompt attached (by reference).
        self.replacing: int | None = None
        self.replacing_key: str | None = None  # its recall record: never a capsule meanwhile
        self.attachments: list[dict[str, Any]] = []
        self.incognito = False
        """The next conversation this log creates is kept out of memory and off
        the disk (newt.store.conversation_store)."""

    # -- which conversation ------------------------------------------------------

    @property
    def keeps_nothing(self) -> bool:
        """Incognito: this conversation (or, before its first turn, the next one)."""
        conv = self.conversation
        return conv.incognito if conv is not None else self.incognito

    @property
    def unsaved(self) -> bool:
        """Nothing of this conversation (or the next one) is written to disk."""
        if self.conversation is None:
            return self.incognito
        return self.store.in_memory

    def clear(self) -> None:
        self.conversation = None
        self.replacing, self.replacing_key, self.attachments = None, None, []
        self._turn_keys, self._record_key = [], None
        self._seen = (0, None, 0)
        self.tally.reset()

    async def load(self, conv: Conversation) -> list[StoredTurn]:
        """Switch to `conv`; returns its log for the provider to restore from."""
        self.clear()
        await self.store.bind_for(conv)
        self.conversation = conv
        log = await self.store.turns.for_conversation(conv.id)
        pending = sum(1 for t in log if t.status == "pending")
        self._seen = (len(log), log[-1].id if log else None, pending)
        self.tally.reset(log)
        return log

    def track_resident(
        self, log: list[StoredTurn], resident_turns: int, excluded: Collection[int] = ()
    ) -> None:
        """After a restore: the keys of the `resident_turns` newest turns and the record
        (replaced and `excluded` turns are not part of the conversation)."""
        live = live_rows(log, excluded)
        kept = [t for t in live if t.kind == "turn" and t.status in _RESIDENT_STATUSES]
        records = [t for t in live if t.kind == "compaction"]
        self._turn_keys = [t.record_keys for t in _newest(kept, resident_turns)]
        self._record_key = records[-1].record_key if records else None

    async def ensure(self) -> Conversation:
        if self.conversation is None:
            if self.incognito:  # nothing of it on disk: memory only
                await self.store.use_memory()
            else:
                self.store.use_disk()
            self.conversation = await self.store.conversations.create(
                model=self.model, base_url=self.base_url, incognito=self.incognito
            )
        return self.conversation

    async def history(self) -> list[StoredTurn]:
        """The whole durable log, replaced turns included (see live_log.live_rows)."""
        if self.conversation is None:
            return []
        return await self.store.turns.for_conversation(self.conversation.id)

    async def changed_elsewhere(self) -> bool:
        """Did another newt add or finish a turn here since we last read or wrote?"""
        if self.conversation is None:
            return False
        return await self.store.turns.shape(self.conversation.id) != self._seen

    # -- the turn's writes ---------------------------------------------------------

    async def begin(self, text: str) -> int:
        """Persist the user's words (pending) before anything is sent."""
        conv = await self.ensure()
        attachments, self.attachments = self.attachments, []
        turn_id = await self.store.turns.add_pending(conv.id, text, attachments=attachments)
        if not conv.title:
            conv.title = make_title(text)  # the store titled it the same way
        rows, _, pending = self._seen
        self._seen = (rows + 1, turn_id, pending + 1)
        return turn_id

    async def complete(
        self,
        turn_id: int,
        reply: str,
        *,
        interrupted: bool,
        tokens_in: int | None,
        tokens_out: int | None,
        tool_events: list[dict[str, object]],
        thinking: str = "",
        stats: ReplyStats | None = None,
        recall_reply: bool = True,
    ) -> None:
        await self.store.turns.complete(
            turn_id,
            reply,
            status="interrupted" if interrupted else "complete",
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            tool_events=tool_events,
            details=(stats or ReplyStats(None, None, None)).details(thinking),
            replaces=self.replacing,
            recall_reply=recall_reply,
        )
        self.replacing = self.replacing_key = None
        self.tally.add(turn_id, stats)
        self._settled()
        self._turn_keys.append((f"t{turn_id}", f"r{turn_id}"))

    async def index_tool_results(
        self, turn_id: int, results: list[tuple[str, dict[str, Any], str]]
    ) -> None:
        """Tool results from outside newt (MCP) as recall records t<turn>.<n>."""
        conv_id = self.conversation.id if self.conversation else None
        for n, (name, arguments, text) in enumerate(results, start=1):
            args = json.dumps(arguments, ensure_ascii=False, default=str)
            content = f"Tool {name} {args}\nResult: {text}"
            await self.store.records.add(
                f"t{turn_id}.{n}", "turn", content, conversation_id=conv_id, role="tool"
            )

    async def fail(self, turn_id: int, message: str) -> None:
        await self.store.turns.fail(turn_id, message)
        self._settled()

    async def persist_compaction(
        self, provider: MemoryProvider, reason: str
    ) -> ev.Compacted | None:
        """Append the provider's new compaction record, if it minted one."""
        record = provider.take_compaction_record()
        if record is None or self.conversation is None:
            return None
        usage = provider.usage()
        used_after = usage[1] if usage else 0
        resident = provider.resident_turns()
        turn_id = await self.store.turns.add_compaction(
            self.conversation.id,
            record,
            resident_turns=resident,
            used_after=used_after,
            summary=recall_text(record),
        )
        rows, _, pending = self._seen
        self._seen = (rows + 1, turn_id, pending)
        self._turn_keys = _newest(self._turn_keys, resident)
        self._record_key = f"c{turn_id}"
        return ev.Compacted(record, resident, used_after, reason)

    def _settled(self) -> None:
        """One of our pending turns was completed or failed."""
        rows, newest, pending = self._seen
        self._seen = (rows, newest, max(0, pending - 1))

    def resident_keys(self) -> set[str]:
        keys = {k for turn in self._turn_keys for k in turn}
        if self._record_key is not None:
            keys.add(self._record_key)
        if self.replacing_key is not None:  # the turn being replaced: message and reply
            keys |= {self.replacing_key, "r" + self.replacing_key[1:]}
        return keys


def _newest(items: list[_T], n: int) -> list[_T]:
    """The last `n` items (none for n <= 0; all when n exceeds the list)."""
    return items[max(0, len(items) - n) :] if n > 0 else []
