"""Every tunable of the recall pipeline, in one place (docs/design.md section 7).

`RecallTuning` is what `RecallEngine` reads at each stage; benchmarks override
it (`benchmarks/locomo.py --tune lexical_weight=0.5`), never engine
attributes. Each value was chosen on the LoCoMo development conversations and
each stage it drives was kept only when it helped on held-out conversations
(docs/benchmarks.md, the ablation table); a share of 0 turns its stage off.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace


@dataclass(frozen=True)
class RecallTuning:
    # Candidates looked at per returned record, and at least min_pool, from
    # each of the words' and the meaning's rankings.
    pool_factor: int = 2
    min_pool: int = 48
    # fuse: the words' share of a fused score (the rest is meaning's).
    lexical_weight: float = 0.6
    # said then: a record said inside the time the query names scores
    # (1 + span_weight) times as high.
    span_weight: float = 1.0
    # floor (relatedness.py): a message is related to memory only when its
    # best record reaches gate_cosine or gate_coverage; then a record is
    # carried only when it reaches record_cosine or record_coverage.
    gate_cosine: float = 0.40
    gate_coverage: float = 0.40
    record_cosine: float = 0.30
    record_coverage: float = 0.15
    # pairs: a user's message and its reply that both matched each gain
    # pair_share of the other's score.
    pair_share: float = 0.2
    # newer links: every candidate is linked to its newer statement, which
    # goes wherever it goes (newer.later_statements; off only to measure it).
    newer_links: bool = True
    # own words: a message about the user (own_words.about_the_user) carries
    # none of the assistant's lines (off only to measure it).
    own_words: bool = True
    # context: the best neighbour_hits hits bring the messages next to them at
    # neighbour_share of their score.
    neighbour_hits: int = 8
    neighbour_share: float = 0.9
    # sittings: a message said in a sitting where other things matched scores
    # (1 + sitting_share x the sitting's worth / the best's) times as high.
    sitting_share: float = 2.0
    sitting_depth: int = 30
    sitting_top: int = 2

    def with_values(self, values: dict[str, str]) -> RecallTuning:
        """A copy with `values` (name -> text, as on a command line) applied;
        an unknown name raises KeyError."""
        types = {f.name: type(getattr(self, f.name)) for f in fields(self)}
        changes: dict[str, object] = {}
        for name, raw in values.items():
            if name not in types:
                raise KeyError(f"no recall tunable {name!r}; known: {', '.join(sorted(types))}")
            kind = types[name]
            changes[name] = raw.lower() in ("1", "true", "yes") if kind is bool else kind(raw)
        return replace(self, **changes)  # type: ignore[arg-type]
