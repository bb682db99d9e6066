"""Words folded and stemmed exactly as the recall index's FTS5 tokenizer does.

The index tokenizes with `porter unicode61 remove_diacritics 2` (migration
m005). Reimplementing that in Python (casefold + NFKD, say) disagrees with it
on real words: unicode61 keeps `ß` and the `ﬁ` ligature as they are, while
casefold/NFKD turn them into `ss` and `fi`, so `Hauptstraße` or `ﬁle` matched
nothing. Instead SQLite's own tokenizer answers: the words are inserted into
an in-memory FTS5 table inside a transaction that is rolled back, and its
`fts5vocab` table reports the tokens. About 5 µs a word the first time, a
dict lookup after that.

- `fold(word)`: the unicode61 token(s) (lowercased, diacritics removed, not
  stemmed), i.e. what goes into a MATCH string;
- `stem(word)`: the index token(s), folded and stemmed (`codes` -> `code`), i.e.
  the identity of a search term: two words with one stem match the same records.

A word the tokenizer splits (rare: the regex below already splits where
unicode61 does) maps to its tokens joined by a space, a phrase in MATCH.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable

# The tokenizer of the recall index (see newt.store.migrations.m005).
INDEX_TOKENIZER = "porter unicode61 remove_diacritics 2"
FOLD_TOKENIZER = "unicode61 remove_diacritics 2"

# Letters and digits only: the index's unicode61 tokenizer treats everything
# else (punctuation, `_`, quotes) as a separator, so these are its tokens.
WORD = re.compile(r"[^\W_]+")

# Bound on remembered words (a few MB at most).
CACHE_WORDS = 200_000


class _Tokenizer:
    """A private in-memory SQLite whose FTS5 tables tokenize like the index."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        for name, tokenizer in (("stemmed", INDEX_TOKENIZER), ("folded", FOLD_TOKENIZER)):
            self._conn.execute(f"CREATE VIRTUAL TABLE {name} USING fts5(w, tokenize='{tokenizer}')")
            self._conn.execute(f"CREATE VIRTUAL TABLE {name}_v USING fts5vocab({name}, 'instance')")
        self._cache: dict[str, tuple[str, str]] = {}

    def stem_list(self, words: list[str]) -> list[str]:
        """The stem of each word, in order (the hot path: mostly dict hits)."""
        cache = self._cache
        try:
            return [cache[w][1] for w in words]
        except KeyError:
            self.lookup(words)
            return [cache[w][1] if w in cache else self._tokenize([w])[w][1] for w in words]

    def lookup(self, words: Iterable[str]) -> dict[str, tuple[str, str]]:
        """(folded, stemmed) for each word; "" when the word holds no token."""
        cache = self._cache
        found: dict[str, tuple[str, str]] = {}
        missing: list[str] = []
        for word in words:
            hit = cache.get(word)
            if hit is None:
                missing.append(word)
            else:
                found[word] = hit
        if missing:
            fresh = self._tokenize(list(dict.fromkeys(missing)))
            if len(cache) + len(fresh) > CACHE_WORDS:
                cache.clear()
            cache.update(fresh)
            found.update(fresh)
        return found

    def _tokenize(self, words: list[str]) -> dict[str, tuple[str, str]]:
        rows = list(enumerate(words))
        tokens: dict[str, list[list[str]]] = {"folded": [], "stemmed": []}
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN")
            try:
                for name, out in tokens.items():
                    conn.executemany(f"INSERT INTO {name}(rowid, w) VALUES (?, ?)", rows)
                    out.extend([] for _ in words)
                    cur = conn.execute(f"SELECT doc, term FROM {name}_v ORDER BY doc, offset")
                    for doc, term in cur:
                        out[doc].append(term)
            finally:
                conn.execute("ROLLBACK")  # the tables stay empty: nothing to clean up
        return {
            word: (" ".join(tokens["folded"][i]), " ".join(tokens["stemmed"][i]))
            for i, word in enumerate(words)
        }


_TOKENIZER = _Tokenizer()


def fold(word: str) -> str:
    """The word as unicode61 (remove_diacritics 2) indexes it, before stemming."""
    return _TOKENIZER.lookup((word,))[word][0]


def stem(word: str) -> str:
    """The word as the recall index stores it: folded, then porter-stemmed."""
    return _TOKENIZER.lookup((word,))[word][1]


def stems(words: Iterable[str]) -> dict[str, str]:
    """`stem` of many words at once (one SQLite round trip for the unseen ones)."""
    return {w: s for w, (_, s) in _TOKENIZER.lookup(words).items()}


def stem_list(words: list[str]) -> list[str]:
    """`stem` of each word, in order."""
    return _TOKENIZER.stem_list(words)


def analyze(words: Iterable[str]) -> dict[str, tuple[str, str]]:
    """(fold, stem) of many words at once."""
    return _TOKENIZER.lookup(words)
