"""What a record is embedded as: its pieces (docs/design.md section 7).

`record_pieces(content, role)`: whole sentences packed to at most CHUNK_CHARS
characters (embedder.chunks), and for the user's own messages also each
clause in which the user speaks of themselves ("I've started learning the
cello") and each one of theirs they name ("my daughter Maya", "our cat
Mochi"), alone. A record scores as its best piece.
Why: a fact about the user is mostly said in passing, inside a sentence about
something else, and asked about later in other words ("Who gives me music
lessons?"); a small embedding model reads the sentence as its main topic and
misses the fact, while the clause alone meets the question. Only what the
user tells, in a question's sentence too ("I'm a physiotherapist, so my back
is fine, but what helps with jet lag?"): the clause that asks tells nothing,
and an assistant's "I" is the model's, not the user's life; so unrelated
messages find little more to match (docs/benchmarks.md).
"""

from __future__ import annotations

import re

from newt.recall.embedder import _SENTENCE_END, CHUNK_CHARS, MAX_CHUNKS, chunks

# Pieces of one record at most, clauses included.
MAX_PIECES = 2 * MAX_CHUNKS
# A clause shorter than this joins the next ("Last thing:", "my teacher,").
MIN_CLAUSE_WORDS = 3

# A full stop after these ends no sentence ("Mrs. Okafor", "St. Olav's").
_ABBREVIATION = re.compile(
    r"(?:^|\s)(?:mr|mrs|ms|dr|st|prof|jr|sr|vs|etc|e\.g|i\.e|no)\.$", re.IGNORECASE
)
_JOINS = r"(?:and|but|so|because|since|which|who|while|although|though)"
_CLAUSE_BREAK = re.compile(rf"\s*[,;:()]\s+|\s+{_JOINS}\s+|\s+[-\u2013\u2014]+\s+", re.IGNORECASE)
_LEADING_JOIN = re.compile(rf"^{_JOINS}\s+", re.IGNORECASE)
# Someone or something of the user's, named: "my daughter Maya", "our cat
# Mochi", "my teacher, Mrs. Okafor".
_NAMED = re.compile(
    r"\b(?:[Mm]y|[Oo]ur)\s+(?:[a-z'\u2019-]+\s+){0,2}[a-z'\u2019-]+,?\s+"
    r"(?:(?:Mrs?|Ms|Dr)\.\s+)?[A-Z][\w'\u2019-]+"
)
# A clause that asks rather than tells ("what should I cook", "can you help").
_ASKING = re.compile(
    r"(?:what|how|why|when|where|which|who|whom|whose|is|are|am|was|were|do|does|did|can|could"
    r"|would|will|should|shall|may|might|have|has|had)\b",
    re.IGNORECASE,
)
# The speaker speaking of themselves (own_words.py reads it too).
SELF = re.compile(
    r"\b(?:i|i'm|i've|i'd|i'll|my|mine|we|we're|we've|we'd|we'll|our|ours)\b", re.IGNORECASE
)


def record_pieces(content: str, role: str | None) -> list[str]:
    """The texts `content` is embedded as: its packed sentences, and for a
    user's message (`role` "user") the clauses that speak of the user and
    the ones of theirs it names."""
    packed = chunks(content)
    if role != "user":
        return packed
    return (packed + self_clauses(content, packed))[:MAX_PIECES]


def self_clauses(text: str, skip: list[str]) -> list[str]:
    """The clauses of `text` in which the speaker tells something of
    themselves (a question's clauses before it asks, none that asks), and
    the people and things of theirs named there, each once, none of `skip`
    (commas aside)."""
    seen = {piece.replace(",", "") for piece in skip}
    found = []
    for sentence in _sentences(text):
        named = [m.group(0) for m in _NAMED.finditer(sentence)]
        clauses = _clauses(sentence)
        if sentence.endswith("?"):
            # a request, not something the user tells; but what the user
            # says before asking is ("I'm a physiotherapist, so my back is
            # fine, but what helps with jet lag?")
            clauses = [c for c in clauses[:-1] if not _ASKING.match(c)]
        for clause in [*clauses, *named]:
            clause = clause[:CHUNK_CHARS]
            said = clause.replace(",", "")
            if SELF.search(clause) and said not in seen:
                seen.add(said)
                found.append(clause)
    return found


def _sentences(text: str) -> list[str]:
    sentences: list[str] = []
    for part in _SENTENCE_END.split(text.strip()):
        part = part.strip()
        if not part:
            continue
        if sentences and _ABBREVIATION.search(sentences[-1]):
            sentences[-1] = f"{sentences[-1]} {part}"
        else:
            sentences.append(part)
    return sentences


def _clauses(sentence: str) -> list[str]:
    clauses: list[str] = []
    held = ""
    for part in _CLAUSE_BREAK.split(sentence):
        part = _LEADING_JOIN.sub("", part.strip())
        if not part:
            continue
        held = f"{held} {part}" if held else part
        if len(held.split()) >= MIN_CLAUSE_WORDS:
            clauses.append(held)
            held = ""
    if held:
        if clauses:
            clauses[-1] = f"{clauses[-1]} {held}"
        else:
            clauses.append(held)
    return clauses
