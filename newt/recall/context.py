"""Stage 7 of recall (engine.py): the context around the best hits.

The best `neighbour_hits` hits bring the messages next to them (the other
half of the turn, the reply before a user's message or the message after a
reply), at `neighbour_share` of the hit's score: what was said around a fact
often names it. Every candidate is linked to its newer statement among the
candidates (newer.py), and the messages around a hit carry the hit's link.
The rows read are kept in a `Read`, filled ahead while the query is
embedded, so the stage finds most of what it needs there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from newt.recall.newer import NewerStatements, held_terms, later_statements
from newt.recall.tuning import RecallTuning
from newt.store import Database
from newt.store.models import MemoryRecord
from newt.store.records import RecordRepo, row_to_record


@dataclass
class Read:
    """What one recall has read so far: rows by id (`asked`: every id looked
    up, a row missing from `rows` was left out) and each hit's neighbours by
    hit id. Read ahead while the query is embedded, so the rest of the
    recall finds most of it here."""

    asked: set[int] = field(default_factory=set)
    rows: dict[int, Any] = field(default_factory=dict)
    neighbours: dict[int, list[MemoryRecord]] = field(default_factory=dict)


class Context:
    """Reads candidate rows and brings the context around the hits."""

    def __init__(
        self, db: Database, newer_statements: NewerStatements, tuning: Callable[[], RecallTuning]
    ) -> None:
        self.db = db
        self.newer_statements = newer_statements
        self._tuning = tuning
        self._records = RecordRepo(db)

    @property
    def tuning(self) -> RecallTuning:
        return self._tuning()

    async def load(self, ranked: list[tuple[int, float]], read: Read) -> list[MemoryRecord]:
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

    async def read_ahead(
        self, ranked: list[tuple[int, float]], terms: list[str], excluded: set[int], read: Read
    ) -> None:
        """What `load` and `around` would read for `ranked` alone, into `read`."""
        hits = await self.load(ranked, read)
        await self.read_neighbours(hits[: self.tuning.neighbour_hits], read)

    async def around(
        self, hits: list[MemoryRecord], terms: list[str], excluded: set[int], read: Read
    ) -> list[MemoryRecord]:
        """`hits` (best first) with their neighbours and newer statements, by score."""
        t = self.tuning
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
        # sharing a query word with it.
        held = held_terms(hits, terms)
        linking = set(await self.newer_statements.linking_terms(held, terms))
        later = (
            later_statements(hits, {i: [w for w in h if w in linking] for i, h in held.items()})
            if t.newer_links
            else {}
        )
        for hit in hits:
            newer = later.get(hit.id)
            if newer is not None:
                found[hit.id] = replace(found[hit.id], newer_key=newer.key)
        await self.read_neighbours(hits[: t.neighbour_hits], read)
        for hit in hits[: t.neighbour_hits]:
            if hit.role not in ("user", "assistant") or hit.turn_id is None:
                continue
            for near in read.neighbours[hit.id]:
                offer(near, hit.score * t.neighbour_share, found[hit.id].newer_key)
        for rid, record in extra.items():
            found[rid] = record
        return sorted(found.values(), key=lambda r: -r.score)

    async def read_neighbours(self, hits: list[MemoryRecord], read: Read) -> None:
        """The neighbours of those `hits` not in `read` yet, into it (one statement)."""
        missing = [hit for hit in hits if hit.id not in read.neighbours]
        if missing:
            for hit, near in zip(missing, await self._records.neighbours_of(missing), strict=True):
                read.neighbours[hit.id] = near
