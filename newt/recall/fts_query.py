"""Turn free user text into safe FTS5 queries, with words folded the way the index does.

User text is never handed to FTS5 as query syntax: `"foo" AND (bar`, `*`,
`col:`, `NEAR(...)` or a stray quote would either raise or change the meaning
of the search. Instead the text is split into words, every word becomes a
quoted FTS5 string (inside which nothing is an operator) and the strings are
OR-ed, so bm25 ranks records by how many of the words they share and how rare
those words are. `choose_terms` and `plan_search` keep that cheap on large stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from newt.recall.tokens import WORD, analyze

# Distinct words looked up per query: a pasted page must not cost a lookup
# per word. Their document frequencies are counted only up to RARE_DF + 1,
# which keeps each lookup to a few hundred postings however common the word.
MAX_TERMS = 128
RARE_DF = 128
# At most this many rare and common words take part in one ranking query.
MAX_RARE = 16
MAX_COMMON = 4

# Words so common they match nearly every record and only slow bm25 down.
_STOP_WORDS_TEXT = """
    a about above after again all am an and any are as at be been before being below
    between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to
    too under until up very was we were what when where which while who whom why will
    with would you your yours yourself yourselves s t d ll m re ve don doesn didn isn
    wasn aren weren hasn haven won wouldn shouldn couldn let lets please tell know
    say said says
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())


def query_terms(text: str) -> list[str]:
    """Distinct search terms of `text` folded as the index folds them, in
    first-seen order; words with one stem (`code`, `codes`) count once.

    Each term is the first-seen word's fold (not its stem: porter is not
    idempotent, `agreed` -> `agre` -> `agr`, so a MATCH string must hold the
    word, which FTS5 stems itself). Stop words are dropped unless nothing
    else is left (a query of only common words still deserves an answer).
    Past MAX_TERMS, the longest words are kept: length is a cheap stand-in
    for how specific a word is.
    """
    words = [match.group() for match in WORD.finditer(text)]
    found = analyze(words)
    by_stem: dict[str, str] = {}
    for word in words:
        folded, stemmed = found[word]
        if stemmed:
            by_stem.setdefault(stemmed, folded)
    words = list(by_stem.values())
    content = [w for w in words if w not in STOP_WORDS]
    terms = content or words
    if len(terms) > MAX_TERMS:
        keep = set(sorted(terms, key=len, reverse=True)[:MAX_TERMS])
        terms = [t for t in terms if t in keep][:MAX_TERMS]
    return terms


def quote(term: str) -> str:
    """An FTS5 string literal: inside double quotes nothing is an operator."""
    return '"' + term.replace('"', '""') + '"'


@dataclass(frozen=True)
class TermChoice:
    """The query words that take part in a search, split by how common they are."""

    rare: list[str]  # choose the candidates (and score them)
    common: list[str]  # only add to the candidates' scores
    common_dropped: bool = False  # more common words than MAX_COMMON: a long text

    @property
    def scored(self) -> list[str]:
        return self.rare + self.common


def choose_terms(doc_freqs: Sequence[tuple[str, int]], cap: int) -> TermChoice:
    """Split query words by document frequency (clipped anywhere above RARE_DF).

    Words that match nothing are dropped: they add nothing to any bm25 score.
    Rare words are taken rarest first while the records they match stay
    within `cap`. A long message has many common words, mostly noise, and
    each one costs FTS5 a pass over its postings; only the last MAX_COMMON
    are kept, since a long message usually ends with its actual question.
    """
    present = [(term, df) for term, df in doc_freqs if df > 0]
    rare: list[str] = []
    total = 0
    for term, df in sorted(present, key=lambda p: p[1]):
        if df > RARE_DF or total + df > cap or len(rare) == MAX_RARE:
            break
        rare.append(term)
        total += df
    chosen = set(rare)
    common = [term for term, _ in present if term not in chosen]
    return TermChoice(rare, common[-MAX_COMMON:], len(common) > MAX_COMMON)


@dataclass(frozen=True)
class SearchPlan:
    """One FTS5 ranking query; `plan_search` explains the variants."""

    match: str
    correction: str | None = None
    newest_only: bool = False


def _any_of(terms: Sequence[str]) -> str:
    return " OR ".join(quote(t) for t in terms)


def plan_search(terms: TermChoice, *, small_store: bool) -> list[SearchPlan]:
    """Plans to try in order (the first that matches anything wins).

    bm25 costs FTS5 about a microsecond per matching record, so an OR over a
    word found in half the store would score half the store. Following
    Lucene's "common terms" query, rare words choose the candidates and common
    words only add to their scores: records sharing nothing but common words
    with the query (whose bm25 weight is small) are not candidates.

    - A small store (at most `cap` records) is ranked exactly, any word matching.
    - `match` is what a candidate must match and its bm25 the score, less
      bm25(`correction`) when that is set: `match` then repeats the rare
      words, and bm25 is a sum over the query's phrases, so the difference is
      exactly bm25 over all the scored words.
    - `newest_only`: when every word is common, `match` may hit most of the
      store, so only its newest `cap` matches are scored (records holding all
      the words first, then any).
    """
    scored = terms.scored
    if not scored:
        return []
    every = _any_of(scored)
    if small_store or not terms.common:
        return [SearchPlan(every)]
    if terms.rare:
        chosen = _any_of(terms.rare)
        return [SearchPlan(f"({chosen}) AND ({every})", correction=chosen)]
    if len(scored) == 1:
        return [SearchPlan(every, newest_only=True)]
    all_of = " AND ".join(quote(t) for t in scored)
    return [SearchPlan(all_of, newest_only=True), SearchPlan(every, newest_only=True)]
