"""bm25 over the FTS5 index of every memory record, kept cheap on large
stores (docs/design.md section 7).

`WordRanking` counts each query word's records (stopping early for common
words), ranks with the plans of `fts_query.plan_search` reading no content,
and ranks the records said inside a time span. Why a class: the words seen
to be common are remembered between recalls.
"""

from __future__ import annotations

from newt.recall.excerpt import focus_terms
from newt.recall.fts_query import RARE_DF, SearchPlan, choose_terms, plan_search, quote
from newt.recall.relatedness import word_weights
from newt.recall.time_span import TimeSpan
from newt.store import Database

# Most records bm25 may score per recall (see fts_query.plan_search): FTS5
# spends about a microsecond on each, so a recall stays within milliseconds at
# any store size.
MAX_SCORED = 4000
# Bound on the remembered common words (a few hundred KB at most).
COMMON_WORDS_REMEMBERED = 20_000

# bm25 is a sum over the query's phrases: the plan's match repeats the rare
# words, so subtracting their bm25 leaves exactly bm25 over every word.
# MATERIALIZED makes each FTS query run once (a correlated lookup would make
# FTS5 recount every phrase for every row).
_CORRECTED_RANK = """
    WITH hits AS MATERIALIZED (
        SELECT rowid AS id, bm25(memory_fts) AS s FROM memory_fts WHERE memory_fts MATCH ?),
    base AS MATERIALIZED (
        SELECT rowid AS id, bm25(memory_fts) AS s FROM memory_fts WHERE memory_fts MATCH ?)
    SELECT hits.id, hits.s - base.s AS rank FROM hits JOIN base ON base.id = hits.id
    ORDER BY rank, hits.id DESC LIMIT ?
"""
_RANK = """
    SELECT rowid, bm25(memory_fts) AS rank FROM memory_fts
    WHERE memory_fts MATCH ? AND rowid >= ? ORDER BY rank, rowid DESC LIMIT ?
"""
# The best records said inside a span holding a word: the rowid range read
# off the said_at index bounds FTS5's walk.
_SAID_WITHIN = """
    WITH s AS MATERIALIZED (
        SELECT min(id) AS lo, max(id) AS hi FROM memory_records INDEXED BY memory_records_said
        WHERE said_at >= ?1 AND said_at < ?2)
    SELECT f.rowid, bm25(memory_fts) AS rank FROM memory_fts f
    JOIN memory_records r ON r.id = f.rowid
    WHERE memory_fts MATCH ?3 AND f.rowid >= (SELECT lo FROM s) AND f.rowid <= (SELECT hi FROM s)
      AND r.said_at >= ?1 AND r.said_at < ?2
    ORDER BY rank LIMIT ?4
"""
# The newest match, and the rowid `newest_scored` matches back from it.
_NEWEST_BOUND = """
    SELECT (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?1 ORDER BY rowid DESC LIMIT 1),
           (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?1
            ORDER BY rowid DESC LIMIT 1 OFFSET ?2)
"""


class WordRanking:
    """(rowid, bm25) rankings of the records by the query's words; lower bm25 is better."""

    def __init__(self, db: Database, max_scored: int = MAX_SCORED) -> None:
        self.db = db
        self.max_scored = max(1, max_scored)
        # When every word is common, any record holding them is about as good
        # a candidate as another: score fewer of them, newest first.
        self.newest_scored = max(1, self.max_scored // 4)
        # Words seen to match more than RARE_DF records. Records are only
        # added in normal use, so a common word stays common; remembering it
        # spares a long message one index lookup per familiar word.
        self._common_words: set[str] = set()

    async def rank_words(
        self, query: str, words: list[str], pool: int, excluded: set[int]
    ) -> tuple[list[tuple[int, float]], list[str], dict[str, float]]:
        """(rowid, bm25) best first, the words to center excerpts on, and
        every query word's weight (relatedness.word_weights)."""
        span, doc_freqs = await self.doc_freqs(words)
        terms = choose_terms(doc_freqs, self.max_scored)
        # Over-fetch by the number of exclusions, then filter here: a NOT IN
        # inside the FTS query would stop FTS5 from ranking with LIMIT.
        fetch = pool + len(excluded)
        ranked: list[tuple[int, float]] = []
        for plan in plan_search(terms, small_store=span <= self.max_scored):
            ranked = await self._rank(plan, fetch)
            if ranked:
                break
        ranked = [(rowid, rank) for rowid, rank in ranked if rowid not in excluded][:pool]
        if terms.rare and terms.common_dropped:  # a long text: focus on its rare words
            focus = focus_terms(query, terms.rare)
        else:
            focus = terms.scored
        # every word weighs in, those memory never saw most of all: they are
        # what tells a message about something new (relatedness.py)
        return ranked, focus, word_weights(span, doc_freqs)

    async def said_within(
        self, spans: list[TimeSpan], words: list[str], limit: int
    ) -> list[tuple[int, float]]:
        """(rowid, bm25) of the records said inside `spans` holding any of `words`
        (overlapping spans are looked up once, as one)."""
        match = " OR ".join(quote(w) for w in words)
        found: list[tuple[int, float]] = []
        for span in _merged(spans):
            rows = await self.db.conn.execute_fetchall(
                _SAID_WITHIN, (span.start, span.end, match, limit)
            )
            found += [(row[0], row[1]) for row in rows]
        return sorted(found, key=lambda item: item[1])[:limit]

    async def doc_freqs(self, words: list[str]) -> tuple[int, list[tuple[str, int]]]:
        """An upper bound on the number of records, and each word's document
        frequency clipped at RARE_DF + 1 (so a common word costs little)."""
        unknown = [w for w in words if w not in self._common_words]
        one = "(SELECT count(*) FROM (SELECT 1 FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?))"
        params: list[object] = []
        for word in unknown:
            params += [quote(word), RARE_DF + 1]
        (row,) = await self.db.conn.execute_fetchall(
            # max and min each read one end of the rowid b-tree (max - min
            # inside one SELECT would scan the table instead).
            "SELECT (SELECT max(id) FROM memory_records) - (SELECT min(id) FROM memory_records)"
            + "".join(", " + one for _ in unknown),
            params,
        )
        span = 0 if row[0] is None else int(row[0]) + 1
        counted = dict(zip(unknown, (int(n) for n in row[1:]), strict=True))
        if len(self._common_words) > COMMON_WORDS_REMEMBERED:
            self._common_words.clear()
        self._common_words.update(w for w, df in counted.items() if df > RARE_DF)
        return span, [(w, counted.get(w, RARE_DF + 1)) for w in words]

    async def _rank(self, plan: SearchPlan, limit: int) -> list[tuple[int, float]]:
        """(rowid, bm25) best first; bm25 is negative, lower is better. Ties: newer first."""
        conn = self.db.conn
        if plan.correction is not None:
            rows = await conn.execute_fetchall(
                _CORRECTED_RANK, (plan.match, plan.correction, limit)
            )
            return [(row[0], row[1]) for row in rows]
        floor = 0
        if plan.newest_only:
            found = list(
                await conn.execute_fetchall(_NEWEST_BOUND, (plan.match, self.newest_scored - 1))
            )
            newest, bound = found[0] if found else (None, None)
            if newest is None:
                return []
            floor = bound or 0
        rows = await conn.execute_fetchall(_RANK, (plan.match, floor, limit))
        return [(row[0], row[1]) for row in rows]


def _merged(spans: list[TimeSpan]) -> list[TimeSpan]:
    """The same moments as `spans`, overlapping ones joined, in order."""
    merged: list[TimeSpan] = []
    for span in sorted(spans, key=lambda s: s.start):
        if merged and span.start <= merged[-1].end:
            last = merged[-1]
            merged[-1] = TimeSpan(last.start, max(last.end, span.end))
        else:
            merged.append(span)
    return merged
