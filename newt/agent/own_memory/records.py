"""What the user can do with newt's memory: look through it, forget from it,
delete and rename conversations, keep one out of it.

`MemoryRecords` does the work on the store and the recall engine; the session
(newt.agent.session.chat_session) runs each change under its lock and then reloads what it
holds (the conversation's working set, the notes), so nothing forgotten stays
in a request. Searching uses the recall a turn uses, without counting hits.
A forget also rewrites or drops the compaction summaries that quote what was
forgotten (newt.memory.forget_quotes), and says which.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from newt.agent.own_memory.forget_parts import Cut, cut
from newt.memory.compaction import format_record, recall_text
from newt.memory.forget_quotes import DROPPED_SUMMARY, forget_quotes
from newt.recall import RecallEngine, RecallRequest
from newt.store import Conversation, MemoryRecord, Store
from newt.store.forget import FORGOTTEN, Forgotten, MemoryEraser

SEARCH_LIMIT = 50
REMOVED_NOTE = "[removed note]"
"""What a removed note's words read as where the log or a record quoted them."""


@dataclass
class MemoryHit:
    """One record as the memory view lists it."""

    key: str
    kind: str
    """"message", "reply", "tool result", "note" or "summary"."""
    content: str
    said_at: float
    conversation_id: str | None
    conversation_title: str
    score: float = 0.0


@dataclass
class ForgetReport:
    """What a forget or a delete took away, and which summaries it changed."""

    records: int = 0
    messages: int = 0
    notes: int = 0
    conversations: int = 0
    cut: int = 0
    """Messages and replies that kept what did not hold the words (--sentences)."""
    rewritten: list[str] = field(default_factory=list)
    """Summaries that had the forgotten words taken out (where they are)."""
    dropped: list[str] = field(default_factory=list)
    """Summaries removed because they quoted what was forgotten."""
    scrubbed: bool = True
    """False: another newt has the database open; the last traces leave its
    WAL file when that one closes."""

    def describe(self) -> str:
        parts = []
        if self.conversations:
            parts.append(_count(self.conversations, "conversation"))
        if self.messages:
            parts.append(_count(self.messages, "message"))
        if self.notes:
            parts.append(_count(self.notes, "note"))
        parts.append(_count(self.records, "memory record"))
        lines = ["forgot " + ", ".join(parts)]
        if self.cut:
            lines[0] += (
                f"; {_count(self.cut, 'message')} kept what did not hold the words"
                f" (the cut reads {FORGOTTEN})"
            )
        for where, n in Counter(self.rewritten).items():
            lines.append(f"{_count(n, 'summary')} rewritten without the forgotten words: {where}")
        for where, n in Counter(self.dropped).items():
            lines.append(f"{_count(n, 'summary')} dropped (it quoted what was forgotten): {where}")
        if not self.scrubbed:
            lines.append(
                "another newt has the database open: the last copies leave the"
                " database's -wal file when it closes"
            )
        return "\n".join(lines)


def _count(n: int, what: str) -> str:
    if n == 1:
        return f"1 {what}"
    return f"{n} " + (what[:-1] + "ies" if what.endswith("y") else what + "s")


def kind_of(record: MemoryRecord) -> str:
    if record.source == "note":
        return "note"
    if record.source == "compaction":
        return "summary"
    return {"user": "message", "assistant": "reply", "tool": "tool result"}.get(
        record.role or "", "message"
    )


def day(when: float) -> str:
    return time.strftime("%-d %b %Y", time.localtime(when))


class MemoryRecords:
    def __init__(self, store: Store, recall: Callable[[], RecallEngine]) -> None:
        self.store = store
        self.recall = recall
        self.eraser = MemoryEraser(store.db)

    # -- looking -------------------------------------------------------------------

    async def search(self, query: str, limit: int = SEARCH_LIMIT) -> list[MemoryHit]:
        """Every kind of record, ranked by the recall a turn uses (best first);
        an empty query lists the newest records."""
        if not query.strip():
            return await self.hits(await self.store.records.newest(limit))
        found = await self.recall().recall(RecallRequest(query, limit=limit), count_hits=False)
        return await self.hits(found.memories)

    async def matching(self, query: str) -> list[MemoryHit]:
        """What "forget every record matching QUERY" would take: records
        holding the query's words as a phrase, newest first."""
        return await self.hits(await self.eraser.matching(query))

    async def hits(self, records: Sequence[MemoryRecord]) -> list[MemoryHit]:
        titles = await self._titles({r.conversation_id for r in records if r.conversation_id})
        return [
            MemoryHit(
                r.key,
                kind_of(r),
                r.content,
                r.said_at,
                r.conversation_id,
                titles.get(r.conversation_id or "", ""),
                r.score,
            )
            for r in records
        ]

    async def _titles(self, ids: Iterable[str]) -> dict[str, str]:
        titles = {}
        for conv_id in ids:
            conv = await self.store.conversations.get(conv_id)
            if conv is not None:
                titles[conv_id] = conv.title or "(untitled)"
        return titles

    # -- forgetting ----------------------------------------------------------------

    async def forget(
        self, keys: Iterable[str], *, query: str | None = None
    ) -> tuple[ForgetReport, Forgotten]:
        """Forget these records (see newt.store.forget); summaries quoting
        them are rewritten or dropped. A summary's own key drops it, unless
        `query` (forgetting what matches it) no longer finds its words once
        the forgotten messages' quotes are out."""
        keys = [k.strip() for k in keys if k.strip()]
        summaries = [k for k in keys if k.startswith("c")]
        done = await self.eraser.forget_keys(k for k in keys if not k.startswith("c"))
        if await self.eraser.scrub_tool_events(done.old_texts, query or ""):
            done.scrubbed = done.scrubbed and await self.eraser.scrub()
        report = _report(done)
        for note in done.old_notes:  # a forgotten note goes as a removed one does
            done.add(await self.correct(note, None))
        await self._unquote(done, report)
        for key in summaries:
            row = int(key[1:])
            turn = await self.store.turns.get(row)
            if turn is None or (query is not None and not holds_phrase(turn.user, query)):
                continue
            await self.eraser.rewrite_compaction(row, format_record(DROPPED_SUMMARY), None)
            report.dropped.append(await self._where(turn.conversation_id, turn.created_at))
            report.records += 1
        if summaries:
            report.scrubbed = report.scrubbed and await self.eraser.scrub()
        return report, done

    async def forget_matching(
        self, query: str, *, sentences: bool = False
    ) -> tuple[ForgetReport, Forgotten]:
        """Forget every record holding the phrase; with `sentences`, a message
        or reply that says more keeps the rest, only its sentences (and
        clauses) holding the phrase go (newt.agent.own_memory.forget_parts)."""
        hits = await self.matching(query)
        cuts = [(h.key, sentence_cut(h, query) if sentences else None) for h in hits]
        whole = [key for key, c in cuts if c is None]
        report, done = await self.forget(whole, query=query)
        trimmed = Forgotten()
        for key, c in cuts:
            if c is not None:
                trimmed.add(await self.eraser.cut_record(key, c.kept, c.parts))
                report.cut += 1
        if report.cut:
            cut_parts = [p for _, c in cuts if c is not None for p in c.parts]
            await self.eraser.scrub_tool_events(cut_parts, query)
            trimmed.scrubbed = trimmed.scrubbed and await self.eraser.scrub()
            await self._unquote(trimmed, report)  # summaries quoting the parts that went
            report.scrubbed = report.scrubbed and trimmed.scrubbed
            done.add(trimmed)
        return report, done

    async def forget_everything(self) -> tuple[ForgetReport, Forgotten]:
        done = await self.eraser.forget_everything()
        return _report(done), done

    async def delete_conversation(self, conv: Conversation) -> tuple[ForgetReport, Forgotten]:
        done = await self.eraser.delete_conversation(conv.id)
        return _report(done), done

    async def keep_out(self, conv: Conversation) -> tuple[ForgetReport, Forgotten]:
        """Make `conv` incognito and take what was indexed of it out of memory."""
        await self.store.conversations.set_incognito(conv.id, True)
        conv.incognito = True
        done = await self.eraser.drop_index(conv.id)
        return _report(done), done

    async def let_in(self, conv: Conversation) -> None:
        """Memory may hold `conv` again from its next turn (earlier turns stay out)."""
        await self.store.conversations.set_incognito(conv.id, False)
        conv.incognito = False

    async def correct(self, old: str, new: str | None) -> Forgotten:
        """A note was replaced (`new`) or removed (None): its old words leave
        the log, the records and the summaries everywhere."""
        return await self.eraser.replace_text(old, REMOVED_NOTE if new is None else new)

    async def _unquote(self, done: Forgotten, report: ForgetReport) -> None:
        olds = [t for t in done.old_texts if t and t != FORGOTTEN]
        if not olds:
            return
        for row_id, conv_id, _ in await self.eraser.compaction_rows(done.touched):
            current = await self.store.turns.get(row_id)  # a fork's copy may be rewritten already
            if current is None:
                continue
            changed = forget_quotes(current.user, olds)
            if changed is None:
                continue
            new_record, _, how = changed
            await self.eraser.rewrite_compaction(row_id, new_record, recall_text(new_record))
            where = await self._where(conv_id, current.created_at)
            (report.dropped if how == "dropped" else report.rewritten).append(where)
        report.scrubbed = report.scrubbed and await self.eraser.scrub()

    async def _where(self, conv_id: str, when: float) -> str:
        conv = await self.store.conversations.get(conv_id)
        title = (conv.title if conv else "") or "(untitled)"
        return f'"{title}", {day(when)}'


def sentence_cut(hit: MemoryHit, query: str) -> Cut | None:
    """What forgetting only the parts of `hit` holding `query` leaves (None:
    it goes whole; only messages and replies are cut)."""
    return cut(hit.content, query) if hit.kind in ("message", "reply") else None


def holds_phrase(text: str, query: str) -> bool:
    """Whether `text` holds the query's words in a row (case aside)."""
    words = re.findall(r"\w+", query.lower())
    return bool(words) and re.search(r"\W+".join(map(re.escape, words)), text.lower()) is not None


def _report(done: Forgotten) -> ForgetReport:
    return ForgetReport(
        records=done.records,
        messages=done.messages,
        notes=done.notes,
        conversations=done.conversations,
        scrubbed=done.scrubbed,
    )
