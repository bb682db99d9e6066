"""Newer statements (docs/design.md section 7): for the best hits, the newest
record in the store said after it that holds its rarest query word; for every
candidate, the newest later candidate holding a query word it holds (the
packing keeps a record only with its newer one: presentation.pack_block).
Why: an old value never comes alone when a later statement about the same
thing exists.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from newt.recall.fts_query import RARE_DF, quote
from newt.recall.relatedness import holds
from newt.recall.word_ranking import WordRanking
from newt.store import Database
from newt.store.models import MemoryRecord
from newt.store.records import row_to_record

# Records said after a hit that the search for its newer statement first looks
# through when the word is common (see _newest_in_window); speed only.
NEWER_WINDOW = 2048

# The newest records said after a hit holding a word (the first not excluded
# is the hit's newer statement).
_NEWER = """
    SELECT r.* FROM memory_fts f JOIN memory_records r ON r.id = f.rowid
    WHERE memory_fts MATCH ?1 AND r.said_at > ?2 AND r.id != ?3
    ORDER BY r.said_at DESC, r.id DESC LIMIT 4
"""
# The same among the ?4 newest records said after the hit, read off the
# said_at index (m011); FTS5 reads only the word's rowids from the oldest of
# them on. Exact when it finds 4, or when fewer than ?4 records came after.
_NEWER_IN_WINDOW = """
    WITH w AS MATERIALIZED (
        SELECT id, said_at FROM memory_records INDEXED BY memory_records_said
        WHERE said_at > ?2 AND id != ?3 ORDER BY said_at DESC, id DESC LIMIT ?4)
    SELECT r.* FROM w JOIN memory_records r ON r.id = w.id
    WHERE w.id IN (SELECT rowid FROM memory_fts
                   WHERE memory_fts MATCH ?1 AND rowid >= (SELECT min(id) FROM w))
    ORDER BY w.said_at DESC, w.id DESC LIMIT 4
"""
_NEWER_SPAN = """
    SELECT count(*) FROM (SELECT 1 FROM memory_records INDEXED BY memory_records_said
                          WHERE said_at > ?1 AND id != ?2 LIMIT ?3)
"""


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
    """Finds a hit's newer statement; the words' document frequencies come from `words`."""

    def __init__(self, db: Database, words: WordRanking) -> None:
        self.db = db
        self._words = words

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

    async def of(
        self, hit: MemoryRecord, terms: list[str], excluded: set[int]
    ) -> MemoryRecord | None:
        """The newest record said after `hit` holding its rarest query word."""
        held = [t for t in terms if holds(hit.content.lower(), t)]
        if not held:
            return None
        _, freqs = await self._words.doc_freqs(held)
        rarest, df = min(freqs, key=lambda f: f[1])
        params = (quote(rarest), hit.said_at, hit.id)
        rows = await self.newest_in_window(params) if df > RARE_DF else None
        if rows is None:
            rows = list(await self.db.conn.execute_fetchall(_NEWER, params))
        for row in rows:
            if row["id"] not in excluded:
                return row_to_record(row)
        return None

    async def newest_in_window(self, params: tuple[str, float, int]) -> list[Any] | None:
        """What _NEWER returns, looked for among the NEWER_WINDOW newest records
        said after the hit; None when that cannot tell (fewer than 4 matches
        there and older records left). A common word costs a walk down the
        said_at index instead of a sort of every record holding it."""
        rows = list(await self.db.conn.execute_fetchall(_NEWER_IN_WINDOW, (*params, NEWER_WINDOW)))
        if len(rows) >= 4:
            return rows
        (seen,) = await self.db.conn.execute_fetchall(_NEWER_SPAN, (*params[1:], NEWER_WINDOW))
        return rows if seen[0] < NEWER_WINDOW else None


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
