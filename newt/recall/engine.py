"""Recall over every memory record: bm25 on the FTS5 index fused with a
meaning-based ranking (when an embedder is there), the messages around the
best hits, hit counting, retention.

A recall is a few cheap statements so it stays fast on large stores:
1. (only with exclusions) resolve the excluded keys to row ids;
2. count each query word's records, stopping early for common words, and
   bound the store's size (see fts_query.choose_terms);
3. rank in the FTS5 index alone (see fts_query.plan_search), reading no content;
4. with embeddings: embed the query (briefly; on failure, lexical only), rank
   the stored vectors (see vectors.py) and fuse both rankings (`fuse`);
5. read the best candidates' rows (the only full contents ever loaded), lift
   a turn whose two halves both matched (`with_pairs`), add the messages next
   to the best hits and the newest later statement about
   them (`_with_context`);
6. one `UPDATE ... RETURNING` that counts the hit on exactly the returned records.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from newt.recall.embedder import Embedder
from newt.recall.fts_query import query_terms
from newt.recall.fusion import LEXICAL_WEIGHT, PAIR_SHARE, boost, fuse, with_pairs
from newt.recall.newer import NewerStatements, held_terms, later_statements, with_newer
from newt.recall.retention import (
    DEFAULT_EXCERPT_TOKENS,
    LINE_TOKENS,
    RetentionCandidate,
    RetentionReport,
    retain_within_budget,
)
from newt.recall.sittings import SITTING_DEPTH, SITTING_SHARE, SITTING_TOP, with_sittings
from newt.recall.time_span import time_spans
from newt.recall.vectors import VectorIndex
from newt.recall.word_ranking import MAX_SCORED, WordRanking
from newt.store import Database, Store
from newt.store.models import MemoryRecord
from newt.store.records import RecordRepo, row_to_record

__all__ = ["RecallEngine", "RecallRequest", "RecallResponse", "boost", "fuse", "to_candidates"]

SECONDS_PER_HOUR = 3600.0
# Candidates looked at per returned record, and at least MIN_POOL: repeats of
# an older record drop out, and the lexical and meaning rankings each bring
# their best.
POOL_FACTOR = 2
MIN_POOL = 48
# The best NEIGHBOUR_HITS hits bring the messages next to them, scored at
# NEIGHBOUR_SHARE of the hit's; the best NEWER_HITS bring the newest later
# record holding their rarest query word, at NEWER_SHARE (see _with_context).
NEIGHBOUR_HITS = 8
NEIGHBOUR_SHARE = 0.9
NEWER_HITS = 3
NEWER_SHARE = 0.5
# What being said inside the time the query names ("on 8 May 2023",
# "yesterday") adds to a record's fused score, times its share of the best
# bm25 among the records said then.
SPAN_WEIGHT = 1.0


@dataclass
class RecallRequest:
    query: str
    limit: int = 8
    retained_token_budget: int | None = None


@dataclass
class RecallResponse:
    """`memories` best first; `retained_evidence` is set iff a budget was requested.

    `terms` are the folded words the capsule excerpts were
    centered on, e.g. for highlighting them in the sidebar.
    """

    memories: list[MemoryRecord]
    retained_evidence: RetentionReport | None
    terms: list[str] = field(default_factory=list)


def to_candidates(records: Sequence[MemoryRecord], now: float) -> list[RetentionCandidate]:
    """Retention candidates for recalled records, keyed by their retrieval key."""
    return [
        RetentionCandidate(
            id=r.key,
            content=r.content,
            access_count=r.access_count,
            age_hours=max(0.0, (now - r.created_at) / SECONDS_PER_HOUR),
            retrieval_score=r.score,
            role=r.role or "",
            said_at=r.said_at,
            kind=r.source,
            newer=r.newer_key or "",
        )
        for r in records
    ]


@dataclass
class _Read:
    """What one recall has read so far: rows by id (`asked`: every id looked
    up, a row missing from `rows` was left out), each hit's neighbours and
    newer statement by hit id. Read ahead while the query is embedded, so
    the rest of the recall finds most of it here."""

    asked: set[int] = field(default_factory=set)
    rows: dict[int, Any] = field(default_factory=dict)
    neighbours: dict[int, list[MemoryRecord]] = field(default_factory=dict)
    newer: dict[int, MemoryRecord | None] = field(default_factory=dict)


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
    ) -> None:
        self.db = store.db if isinstance(store, Store) else store
        self.embedder = embedder
        self._vectors = VectorIndex(self.db, embedder.space) if embedder else None
        self.excerpt_tokens = excerpt_tokens
        # max_scored is exposed so tests can drive the large-store plans with a few records.
        self.words = WordRanking(self.db, max_scored)
        self.newer_statements = NewerStatements(self.db, self.words)
        self._records = RecordRepo(self.db)
        # Tunables of the recall pipeline (benchmarks/locomo.py measures them).
        self.neighbour_hits = NEIGHBOUR_HITS
        self.neighbour_share = NEIGHBOUR_SHARE
        self.newer_hits = NEWER_HITS
        self.newer_share = NEWER_SHARE
        self.pair_share = PAIR_SHARE
        self.lexical_weight = LEXICAL_WEIGHT
        self.span_weight = SPAN_WEIGHT
        self.sitting_share = SITTING_SHARE
        self.sitting_depth = SITTING_DEPTH
        self.sitting_top = SITTING_TOP

    async def recall(
        self,
        request: RecallRequest,
        *,
        exclude_keys: Collection[str] = (),
        now: float | None = None,
        count_hits: bool = True,
    ) -> RecallResponse:
        """The best `request.limit` records for the query, best first.

        Each returned record's access_count is incremented, and the record is
        reported with the count *after* this hit (so it includes this recall).
        `score` is the fused score (see `fuse`): higher is better. Records whose key is in
        `exclude_keys` (already resident in the working set) are neither
        returned nor counted. Never raises on odd user text: a query without
        words returns no memories. `count_hits=False` looks without counting
        (the user inspecting the memory is not a use of it).
        """
        memories, terms = await self._search(
            request.query, request.limit, exclude_keys, count_hits=count_hits
        )
        report = None
        if request.retained_token_budget is not None:
            candidates = to_candidates(memories, self.db.clock() if now is None else now)
            # Excerpts center on the words the ranking used (for a long
            # message, those of its sentences with a rare word), not on
            # every word of the query.
            report = retain_within_budget(
                candidates,
                request.retained_token_budget,
                self.excerpt_tokens,
                query=" ".join(terms),
                line_tokens=LINE_TOKENS,
            )
        return RecallResponse(memories, report, terms)

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
        """The full record for a retrieval key, verbatim (not counted as a hit)."""
        return await self._records.get(key)

    async def _search(
        self, query: str, limit: int, exclude_keys: Collection[str], *, count_hits: bool = True
    ) -> tuple[list[MemoryRecord], list[str]]:
        """Best records first, and the words their excerpts should center on.

        Each record is one message (or note, summary, tool result), scored on
        its own words. The lexical and meaning rankings are fused by score; the
        best hits bring the messages around them (the reply to a hit, the
        message it answered: what was said around a fact often names it) and
        the newest later record that shares the hit's rarest matched word (a
        later statement about the same thing, so an old value never comes
        alone)."""
        spans, rest = time_spans(query, self.db.clock()) if self.span_weight > 0 else ([], query)
        if spans and query_terms(rest):
            query = rest
        words = query_terms(query)
        if limit <= 0 or not (words or self._embedder_ready()):
            return [], []
        excluded = await self._ids_for(exclude_keys)
        pool = max(limit * POOL_FACTOR, MIN_POOL)
        lexical: list[tuple[int, float]] = []
        focus: list[str] = []
        # The meaning path starts first and runs beside the lexical ranking:
        # the query is embedded and the vectors scanned on threads of their
        # own while FTS5 ranks on aiosqlite's.
        meaning = asyncio.ensure_future(self._nearest(query, pool, excluded))
        read = _Read()
        try:
            if words:
                lexical, focus = await self._lexical(query, words, pool, excluded)
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
        ranked = fuse(lexical, nearest, self.lexical_weight)
        if spans and words:
            said = await self.words.said_within(spans, focus or words, pool + len(excluded))
            said = [(rowid, rank) for rowid, rank in said if rowid not in excluded]
            ranked = boost(ranked, lexical, said, self.lexical_weight, self.span_weight)
        if not ranked:
            return [], focus
        records = with_pairs(await self._load(ranked[:pool], read), self.pair_share)
        records = await self._with_context(records, focus or words, excluded, read)
        records = with_sittings(
            records, self.sitting_share, depth=self.sitting_depth, top=self.sitting_top
        )
        records = with_newer(records, limit)
        if not count_hits:
            return records, focus
        return await self._count_hits(records), focus

    async def _read_ahead(
        self, ranked: list[tuple[int, float]], terms: list[str], excluded: set[int], read: _Read
    ) -> None:
        """What _load and _with_context would read for `ranked` alone, into `read`."""
        hits = await self._load(ranked, read)
        await self._read_neighbours(hits[: self.neighbour_hits], read)
        for hit in hits[: self.newer_hits]:
            await self._newer(hit, terms, excluded, read)

    async def _with_context(
        self, hits: list[MemoryRecord], terms: list[str], excluded: set[int], read: _Read
    ) -> list[MemoryRecord]:
        """`hits` (best first) with their neighbours and newer statements, by score."""
        found = {r.id: r for r in hits}
        extra: dict[int, MemoryRecord] = {}

        def offer(record: MemoryRecord, score: float, newer_key: str | None = None) -> None:
            if record.id in excluded:
                return
            known = max(
                (r.score for r in (found.get(record.id), extra.get(record.id)) if r is not None),
                default=None,
            )
            if known is None or known < score:
                extra[record.id] = replace(record, score=score, newer_key=newer_key)

        # A record's newer statement goes wherever the record goes, and so
        # does wherever its neighbours go: what was said around an old value
        # is old too. Every candidate is linked to the newest later candidate
        # sharing a query word with it; the best hits also look in the store.
        held = held_terms(hits, terms)
        linking = set(await self.newer_statements.linking_terms(held, terms))
        later = later_statements(hits, {i: [t for t in h if t in linking] for i, h in held.items()})
        for n, hit in enumerate(hits):
            newer = later.get(hit.id)
            if n < self.newer_hits:
                stored = await self._newer(hit, terms, excluded, read)
                if stored is not None and (newer is None or stored.said_at > newer.said_at):
                    newer = stored
                if newer is not None:
                    offer(newer, hit.score * self.newer_share)
            if newer is not None:
                found[hit.id] = replace(found[hit.id], newer_key=newer.key)
        await self._read_neighbours(hits[: self.neighbour_hits], read)
        for hit in hits[: self.neighbour_hits]:
            if hit.role not in ("user", "assistant") or hit.turn_id is None:
                continue
            for near in read.neighbours[hit.id]:
                offer(near, hit.score * self.neighbour_share, found[hit.id].newer_key)
        for rid, record in extra.items():
            found[rid] = record
        return sorted(found.values(), key=lambda r: -r.score)

    async def _read_neighbours(self, hits: list[MemoryRecord], read: _Read) -> None:
        """The neighbours of those `hits` not in `read` yet, into it (one statement)."""
        missing = [hit for hit in hits if hit.id not in read.neighbours]
        if missing:
            for hit, near in zip(missing, await self._records.neighbours_of(missing), strict=True):
                read.neighbours[hit.id] = near

    async def _newer(
        self, hit: MemoryRecord, terms: list[str], excluded: set[int], read: _Read
    ) -> MemoryRecord | None:
        if hit.id not in read.newer:
            read.newer[hit.id] = await self.newer_statements.of(hit, terms, excluded)
        return read.newer[hit.id]

    async def _lexical(
        self, query: str, words: list[str], pool: int, excluded: set[int]
    ) -> tuple[list[tuple[int, float]], list[str]]:
        """(rowid, bm25) best first, and the words to center excerpts on."""
        return await self.words.rank_words(query, words, pool, excluded)

    def _embedder_ready(self) -> bool:
        return self.embedder is not None and self.embedder.available is not False

    async def _nearest(self, query: str, pool: int, excluded: set[int]) -> list[tuple[int, float]]:
        """(rowid, cosine) nearest the query's meaning; [] without embeddings."""
        if self.embedder is None or self._vectors is None or not self._embedder_ready():
            return []
        if not await self._vectors.has_any():
            return []  # nothing embedded yet: spare the backend the query
        vector = await self.embedder.embed_query(query)
        if vector is None:
            return []
        return await self._vectors.search(vector, pool, excluded)

    async def _load(self, ranked: list[tuple[int, float]], read: _Read) -> list[MemoryRecord]:
        """The ranked records (score: higher is better), in rank order; rows
        already in `read` are not read again."""
        wanted = [i for i, _ in ranked if i not in read.asked]
        if wanted:
            marks = ",".join("?" * len(wanted))
            # A compaction record that a newer one of its conversation replaced
            # says nothing the newer one does not: only the newest is recalled.
            found = await self.db.conn.execute_fetchall(
                f"SELECT * FROM memory_records r WHERE id IN ({marks}) AND NOT ("
                " r.source = 'compaction' AND EXISTS (SELECT 1 FROM memory_records n"
                " WHERE n.conversation_id = r.conversation_id AND n.source = 'compaction'"
                " AND n.id > r.id))",
                wanted,
            )
            read.rows.update((row["id"], row) for row in found)
            read.asked.update(wanted)
        rows = read.rows
        return [row_to_record(rows[i], score) for i, score in ranked if i in rows]

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
