"""Recall over every memory record: one entry point, `RecallEngine.recall`,
and its stages in the order they run (docs/design.md section 7):

1. time      the time the query names ("on 8 May 2023", "yesterday") leaves
             its words (time_span.py); records said then are lifted after fusing
2. words     bm25 over the FTS5 index, reading no content (word_ranking.py)
3. meaning   the query's cosine to every stored vector (vectors.py), on threads
             of its own beside the words
4. fuse      one ranking from both, by score (fusion.fuse), said-then lifted
             (fusion.boost)
5. floor     only records related to the message (relatedness.py)
6. pairs     a turn whose two halves both matched (fusion.with_pairs)
7. context   the messages next to the best hits, and every candidate linked
             to its newer statement (context.py, newer.py)
8. sittings  the lift of being said among other matches (sittings.py)
9. own words the user's message about themselves carries only the user's
             own lines, near it (own_words.py; the floor); the assistant's
             lines leave before the pairs, so they bring no context either
10. pack     (with a budget) the block as the request will carry it, best
             first, a statement only with its newer one (presentation.pack_block)
11. count    one UPDATE ... RETURNING counts the hit on what was returned

Its tunables are one `RecallTuning`. Why one module in this order: each stage
reads what the one before left, and a change to one is read beside the rest.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from newt.recall.context import Context, Read
from newt.recall.embedder import PIECES_TAG, Embedder, retired_spaces
from newt.recall.fts_query import query_terms, quote
from newt.recall.fusion import boost, fuse, with_pairs
from newt.recall.newer import NewerStatements
from newt.recall.own_words import about_the_user
from newt.recall.presentation import CUT_MARK, Packing, pack_block
from newt.recall.relatedness import related
from newt.recall.retention import (
    DEFAULT_EXCERPT_TOKENS,
    RetentionCandidate,
    RetentionReport,
    chain,
)
from newt.recall.sittings import with_sittings
from newt.recall.time_span import time_spans
from newt.recall.tuning import RecallTuning
from newt.recall.vectors import VectorIndex
from newt.recall.word_ranking import MAX_SCORED, WordRanking
from newt.store import Database, Store
from newt.store.models import MemoryRecord
from newt.store.records import RecordRepo, row_to_record

__all__ = [
    "RecallEngine",
    "RecallRequest",
    "RecallResponse",
    "RecallTuning",
    "boost",
    "fuse",
    "to_candidates",
]

SECONDS_PER_HOUR = 3600.0
# Words of a quoted line that fetch looks up (all must be held; then the
# line is checked verbatim).
MAX_FETCH_WORDS = 12


@dataclass
class RecallRequest:
    """One recall. `limit`: the most records returned (a record only with its
    newer statement); with `retained_token_budget`, they are offered to the
    packing and what fits is returned. `packing`: how the block will read
    (the request's token count, whether fetch_record is offered, ...).
    `from_user`: the query is the user's message (a turn's evidence), not a
    search; a message about the user then carries only the user's own lines."""

    query: str
    limit: int = 8
    retained_token_budget: int | None = None
    packing: Packing = field(default_factory=Packing)
    from_user: bool = False


@dataclass
class RecallResponse:
    """`memories` best first; `retained_evidence` and `block` are set iff a
    budget was requested (the capsules packed, and the block as the request
    carries it).

    `terms` are the folded words the capsule excerpts were
    centered on, e.g. for highlighting them in the sidebar.
    """

    memories: list[MemoryRecord]
    retained_evidence: RetentionReport | None
    terms: list[str] = field(default_factory=list)
    block: str = ""


def to_candidates(
    records: Sequence[MemoryRecord], now: float, hits: int = 0
) -> list[RetentionCandidate]:
    """Retention candidates for recalled records, keyed by their retrieval
    key; `hits`: added to each access count (this recall's own hit)."""
    return [
        RetentionCandidate(
            id=r.key,
            content=r.content,
            access_count=r.access_count + hits,
            age_hours=max(0.0, (now - r.created_at) / SECONDS_PER_HOUR),
            retrieval_score=r.score,
            role=r.role or "",
            said_at=r.said_at,
            kind=r.source,
            newer=r.newer_key or "",
            conversation_id=r.conversation_id or "",
        )
        for r in records
    ]


def within_limit(records: list[MemoryRecord], limit: int) -> list[MemoryRecord]:
    """At most `limit` of `records` (best first), a record with a newer
    statement kept only together with it: a superseded value never leaves
    recall alone. The request's block keeps the same rule by tokens
    (presentation.pack_block)."""
    by_key = {r.key: r for r in records}
    kept: set[str] = set()
    for record in records:
        if len(kept) >= limit:
            break
        if record.key in kept:
            continue
        group = chain(record, lambda r: by_key.get(r.newer_key or ""), lambda r: r.key in kept)
        if len(kept) + len(group) <= limit:
            kept.update(r.key for r in group)
    return [r for r in records if r.key in kept]


@dataclass
class _Ranked:
    """What the ranking stages leave: fused (rowid, score) best first, each
    record's cosine to the query, the query's word weights, the words to
    center excerpts on."""

    ranked: list[tuple[int, float]]
    cosines: dict[int, float]
    weights: dict[str, float]
    focus: list[str]


class RecallEngine:
    """Searches all conversations' records. Give it the Store or its Database.

    With an `embedder` whose backend serves embeddings, the query's meaning
    is searched too (over the vectors EmbedQueue stores) and both rankings
    are fused; without one, or when the backend has none, recall is lexical.
    """

    def __init__(
        self,
        store: Store | Database,
        *,
        excerpt_tokens: int = DEFAULT_EXCERPT_TOKENS,
        max_scored: int = MAX_SCORED,
        embedder: Embedder | None = None,
        tuning: RecallTuning | None = None,
    ) -> None:
        self.db = store.db if isinstance(store, Store) else store
        self.embedder = embedder
        self._vectors = VectorIndex(self.db, embedder.space) if embedder else None
        # A store embedded as older pieces, until the queue has embedded it
        # again: the same model's vectors, searched meanwhile.
        self._older: list[VectorIndex] = []
        if embedder and embedder.space.endswith(PIECES_TAG):
            self._older = [VectorIndex(self.db, old) for old in retired_spaces(embedder.space)]
        self.excerpt_tokens = excerpt_tokens
        self.tuning = tuning or RecallTuning()
        # max_scored is exposed so tests can drive the large-store plans with a few records.
        self.words = WordRanking(self.db, max_scored)
        self.newer_statements = NewerStatements(self.db)
        self.context = Context(self.db, self.newer_statements, lambda: self.tuning)
        self._records = RecordRepo(self.db)

    async def recall(
        self,
        request: RecallRequest,
        *,
        exclude_keys: Collection[str] = (),
        now: float | None = None,
        count_hits: bool = True,
    ) -> RecallResponse:
        """The records related to the query, best first: at most
        `request.limit` of them, and with a budget, those the block packs.

        Each returned record's access_count is incremented, and the record is
        reported with the count *after* this hit (so it includes this recall).
        `score` is the fused score (see `fuse`): higher is better. Records whose key is in
        `exclude_keys` (already resident in the working set) are neither
        returned nor counted. Never raises on odd user text: a query without
        words returns no memories. `count_hits=False` looks without counting
        (the user inspecting the memory is not a use of it).
        """
        budget = request.retained_token_budget
        records, terms = await self._search(
            request.query, request.limit, exclude_keys, from_user=request.from_user
        )
        records = within_limit(records, request.limit)
        report, block = None, ""
        if budget is not None:
            at = self.db.clock() if now is None else now
            # Excerpts center on the words the ranking used (for a long
            # message, those of its sentences with a rare word), not on
            # every word of the query.
            report, block = pack_block(
                to_candidates(records, at, 1 if count_hits else 0),
                budget,
                replace(request.packing, now=at),
                query=" ".join(terms),
                excerpt_tokens=self.excerpt_tokens,
            )
            packed = {c.retrieval_key for c in report.capsules}
            records = [r for r in records if r.key in packed]
        if count_hits:
            records = await self._count_hits(records)
        return RecallResponse(records, report, terms, block)

    async def said_since(self, keys: Collection[str]) -> float | None:
        """When the oldest message among `keys` was said (summaries and notes
        do not count: they are not messages); None when there is none."""
        turns = [k for k in keys if k[:1] in ("t", "r")]
        if not turns:
            return None
        cur = await self.db.conn.execute(
            "SELECT min(said_at) FROM memory_records WHERE key IN (SELECT value FROM json_each(?))",
            (json.dumps(turns),),
        )
        row = await cur.fetchone()
        return None if row is None or row[0] is None else float(row[0])

    async def fetch(self, key: str) -> MemoryRecord | None:
        """The full record for a retrieval key, or for the first words of a
        line of the evidence block (a line cut short ends in "…"), verbatim
        (not counted as a hit). The newest record holding those words wins."""
        found = await self._records.get(key.strip())
        if found is not None:
            return found
        # a line's words, as quoted in the block: without its quotes and cut mark
        words = " ".join(key.strip().strip('"\u201c\u201d').rstrip(CUT_MARK).split())
        terms = query_terms(words)
        if not terms:
            return None
        phrase = " AND ".join(quote(t) for t in terms[:MAX_FETCH_WORDS])
        rows = await self.db.conn.execute_fetchall(
            "SELECT r.* FROM memory_fts f JOIN memory_records r ON r.id = f.rowid"
            " WHERE memory_fts MATCH ? ORDER BY r.said_at DESC, r.id DESC LIMIT 64",
            (phrase,),
        )
        wanted = words.lower()
        for row in rows:
            if wanted in " ".join(str(row["content"]).split()).lower():
                return row_to_record(row)
        return None

    async def _search(
        self, query: str, limit: int, exclude_keys: Collection[str], *, from_user: bool = False
    ) -> tuple[list[MemoryRecord], list[str]]:
        """Every candidate related to the query, best first, each linked to
        its newer statement, and the words excerpts should center on: the
        stages of the module docstring, 1-9."""
        t = self.tuning
        asked = query
        spans, rest = time_spans(query, self.db.clock()) if t.span_weight > 0 else ([], query)
        if spans and query_terms(rest):
            query = rest
        words = query_terms(query)
        if limit <= 0 or not (words or self._embedder_ready()):
            return [], []
        excluded = await self._ids_for(exclude_keys)
        pool = max(limit * t.pool_factor, t.min_pool)
        read = Read()
        found = await self._rank(query, words, spans, pool, excluded, read)
        if not found.ranked:
            return [], found.focus
        terms = found.focus or words
        records = await self._load(found.ranked[:pool], read)
        own = from_user and t.own_words and about_the_user(asked)
        records = related(records, found.cosines, found.weights, t, own=own)
        if own:  # no hit, so no context: the lines around advice are not about the user
            records = [r for r in records if r.role != "assistant"]
        records = with_pairs(records, t.pair_share)
        records = await self.context.around(records, terms, excluded, read)
        records = with_sittings(records, t.sitting_share, depth=t.sitting_depth, top=t.sitting_top)
        if own:
            records = [r for r in records if r.role != "assistant"]
        return records, found.focus

    async def _rank(
        self,
        query: str,
        words: list[str],
        spans: list[Any],
        pool: int,
        excluded: set[int],
        read: Read,
    ) -> _Ranked:
        """Stages 2-4: the words and the meaning side by side, fused, said-then lifted."""
        t = self.tuning
        lexical: list[tuple[int, float]] = []
        focus: list[str] = []
        weights: dict[str, float] = {}
        # The meaning path starts first and runs beside the lexical ranking:
        # the query is embedded and the vectors scanned on threads of their
        # own while FTS5 ranks on aiosqlite's.
        meaning = asyncio.ensure_future(self._nearest(query, pool, excluded))
        try:
            if words:
                lexical, focus, weights = await self._lexical(query, words, pool, excluded)
                if not meaning.done():
                    # Still embedding: read meanwhile what the best lexical
                    # hits will need (the words' share of the fused score
                    # keeps most of them on top).
                    await self._read_ahead(lexical[:pool], focus or words, excluded, read)
            nearest = await meaning
        finally:
            if not meaning.done():
                meaning.cancel()
            elif not meaning.cancelled():
                meaning.exception()  # seen: an error of the words' path goes up alone
        ranked = fuse(lexical, nearest, t.lexical_weight)
        if spans and words:
            said = await self.words.said_within(spans, focus or words, pool + len(excluded))
            said = [(rowid, rank) for rowid, rank in said if rowid not in excluded]
            ranked = boost(ranked, lexical, said, t.lexical_weight, t.span_weight)
        return _Ranked(ranked, dict(nearest), weights, focus)

    async def _read_ahead(
        self, ranked: list[tuple[int, float]], terms: list[str], excluded: set[int], read: Read
    ) -> None:
        await self.context.read_ahead(ranked, terms, excluded, read)

    async def _load(self, ranked: list[tuple[int, float]], read: Read) -> list[MemoryRecord]:
        return await self.context.load(ranked, read)

    async def _lexical(
        self, query: str, words: list[str], pool: int, excluded: set[int]
    ) -> tuple[list[tuple[int, float]], list[str], dict[str, float]]:
        """(rowid, bm25) best first, the words to center excerpts on, their weights."""
        return await self.words.rank_words(query, words, pool, excluded)

    def _embedder_ready(self) -> bool:
        return self.embedder is not None and self.embedder.available is not False

    async def _nearest(self, query: str, pool: int, excluded: set[int]) -> list[tuple[int, float]]:
        """(rowid, cosine) nearest the query's meaning; [] without embeddings."""
        if self.embedder is None or self._vectors is None or not self._embedder_ready():
            return []
        index = self._vectors
        if await index.has_any():
            self._older = []  # embedded again (at least its newest records)
        else:
            for old in self._older:  # the newest older scheme that has vectors
                if await old.has_any():
                    index = old
                    break
            else:
                return []  # nothing embedded yet: spare the backend the query
        vector = await self.embedder.embed_query(query)
        if vector is None:
            return []
        return await index.search(vector, pool, excluded)

    async def _count_hits(self, records: list[MemoryRecord]) -> list[MemoryRecord]:
        """Increment access_count of exactly these records, reporting the count after."""
        if not records:
            return []
        marks = ",".join("?" * len(records))
        async with self.db.transaction() as tx:
            rows = await tx.execute_fetchall(
                "UPDATE memory_records SET access_count = access_count + 1"
                f" WHERE id IN ({marks}) RETURNING id, access_count",
                [r.id for r in records],
            )
            counts = {row[0]: row[1] for row in rows}
        return [replace(r, access_count=counts[r.id]) for r in records if r.id in counts]

    async def _ids_for(self, keys: Collection[str]) -> set[int]:
        if not keys:
            return set()
        rows = await self.db.conn.execute_fetchall(
            "SELECT id FROM memory_records WHERE key IN (SELECT value FROM json_each(?))",
            (json.dumps(list(keys)),),
        )
        return {row[0] for row in rows}
