"""Newer statements (docs/design.md section 7): for every candidate, the
newest later candidate holding a query word it holds (the packing keeps a
record only with its newer one: presentation.pack_block). Why: an old value
never comes alone when a later statement about the same thing exists.
"""

from __future__ import annotations

from collections import Counter

from newt.recall.fts_query import RARE_DF, quote
from newt.recall.relatedness import holds
from newt.store import Database
from newt.store.models import MemoryRecord

# A word most candidates hold is looked up among the LINK_SAMPLE newest
# records: held by over half of them (and by more than RARE_DF), it names no
# particular thing and links nothing. A sample, so the look-up stays cheap.
_LINK_SHARE = 0.5
LINK_SAMPLE = 2048
_SAMPLE = "SELECT count(*) FROM memory_records WHERE id > (SELECT max(id) FROM memory_records) - ?"
_HELD_IN_SAMPLE = (
    "SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?"
    " AND rowid > (SELECT max(id) FROM memory_records) - ?"
)


class NewerStatements:
    """Which query words may link a candidate to its newer statement."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def linking_terms(self, held: dict[int, list[str]], terms: list[str]) -> list[str]:
        """The query words that tell what a record is about: all but those
        held by over half of the newest records (a speaker's name opening
        each of their lines in a transcript). `held`: the words each
        candidate holds (`held_terms`). Only a word most candidates hold is
        counted in the store, so a rare word costs nothing."""
        counts = Counter(t for words in held.values() for t in words)
        crowded = [t for t in terms if counts[t] > _LINK_SHARE * len(held)]
        if not crowded:
            return terms
        ((sample,),) = await self.db.conn.execute_fetchall(_SAMPLE, (LINK_SAMPLE,))
        # never in a small store, where a topic may well fill half of it
        most = max(int(sample) // 2, RARE_DF)
        dropped = set()
        for term in crowded:
            ((count,),) = await self.db.conn.execute_fetchall(
                _HELD_IN_SAMPLE, (quote(term), LINK_SAMPLE)
            )
            if count > most:
                dropped.add(term)
        return [t for t in terms if t not in dropped]


def held_terms(candidates: list[MemoryRecord], terms: list[str]) -> dict[int, list[str]]:
    """The query words each candidate holds, by its id."""
    held: dict[int, list[str]] = {}
    for record in candidates:
        text = record.content.lower()
        held[record.id] = [t for t in terms if holds(text, t)]
    return held


def later_statements(
    candidates: list[MemoryRecord], held: dict[int, list[str]]
) -> dict[int, MemoryRecord]:
    """For each candidate (by id), the newest candidate said after it that
    holds one of the query words it holds (`held`, from `held_terms`) and at
    least half of the query's words, and that one's, to the end of the
    chain. Why any word and not the rarest: a later statement about the same
    thing may share only its subject with it ("my sister" moved) and not its
    rarest word ("lives"); why half: a record that holds one of three words
    in passing ("the yoga studio I go to often") answers another question."""
    words = {t for terms in held.values() for t in terms}
    newest: dict[str, MemoryRecord] = {}
    for record in candidates:
        if 2 * len(held[record.id]) < len(words):
            continue  # about the question too: it holds at least half of its words
        for term in held[record.id]:
            best = newest.get(term)
            if best is None or (record.said_at, record.id) > (best.said_at, best.id):
                newest[term] = record
    later: dict[int, MemoryRecord] = {}
    for record in candidates:
        options = [
            newest[t] for t in held[record.id] if t in newest and newest[t].said_at > record.said_at
        ]
        if options:
            later[record.id] = max(options, key=lambda r: (r.said_at, r.id))
    # straight to the end of the chain (each step is said later, so it ends):
    # the newest statement rides along, not every one in between
    for rid, newer in later.items():
        while newer.id in later:
            newer = later[newer.id]
        later[rid] = newer
    return later
