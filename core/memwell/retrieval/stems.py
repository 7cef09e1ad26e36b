"""Porter stems exactly as the keyword index makes them.

The builtin index tokenizes with FTS5's ``porter unicode61 remove_diacritics 2``, so "going"
matches "go" and "parked" matches "park". To know which of a question's terms a hit holds,
and whether a term is a function word in disguise, memwell needs the same stems. They come
from the same code: a private in-memory SQLite FTS5 table with that tokenizer, read back
through ``fts5vocab``. Results are cached; a Python without FTS5 gets each word back as its
own stem (its keyword search is off anyway).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable

TOKENIZER = "porter unicode61 remove_diacritics 2"
#: Cached stems; the cache is cleared when it reaches this many words.
CACHE_WORDS = 200_000


class _Stemmer:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[str, str] = {}
        self._conn: sqlite3.Connection | None = None
        self._available = True

    def _connection(self) -> sqlite3.Connection | None:
        if self._conn is None and self._available:
            try:
                conn = sqlite3.connect(":memory:", check_same_thread=False)
                conn.execute(f"CREATE VIRTUAL TABLE w USING fts5(word, tokenize='{TOKENIZER}')")
                conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(w, 'instance')")
            except sqlite3.Error:
                self._available = False
                return None
            self._conn = conn
        return self._conn

    def stems(self, words: Iterable[str]) -> dict[str, str]:
        wanted = dict.fromkeys(words)
        with self._lock:
            missing = [w for w in wanted if w not in self._cache]
            if missing:
                self._stem(missing)
            return {w: self._cache[w] for w in wanted}

    def _stem(self, words: list[str]) -> None:
        if len(self._cache) + len(words) > CACHE_WORDS:
            self._cache.clear()
        conn = self._connection()
        found: dict[int, str] = {}
        if conn is not None:
            with conn:
                conn.executemany(
                    "INSERT INTO w(rowid, word) VALUES (?, ?)", enumerate(words, start=1)
                )
                # A word of one token (the case for memwell's terms) has one instance.
                for doc, term in conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
                    found.setdefault(int(doc), str(term))
                conn.execute("DELETE FROM w")
        for number, word in enumerate(words, start=1):
            self._cache[word] = found.get(number, word)


_STEMMER = _Stemmer()


def stems(words: Iterable[str]) -> dict[str, str]:
    """Each of ``words`` mapped to its index stem (lowercase, diacritics removed, Porter)."""
    return _STEMMER.stems(words)


def stem(word: str) -> str:
    """The index stem of one ``word`` (see :func:`stems`)."""
    return _STEMMER.stems((word,))[word]
