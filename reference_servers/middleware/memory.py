"""A persistent memory store for the `RetrieveMemories` preprocessor tool (SQLite, ranked search).

    store = MemoryStore("memories.sqlite")      # or ":memory:"
    memory_id = store.remember("The user prefers window seats", tags=["travel"])
    store.search("book me a flight", limit=5)  # [{id, text, tags, score, createdAt}], best first
    store.forget(memory_id)

Storage: one SQLite file through the standard library's `sqlite3`: a
`memories` table (id, text, tags as a JSON array, created_at as ISO 8601 UTC).
Ids come from AUTOINCREMENT, so a forgotten id is never handed out again.
File databases use WAL journaling and a 5 s busy timeout, so another process
may read the file while this one writes. A new file is created with mode 0600
(SQLite gives its -wal and -shm files the same mode); an existing file keeps its own.

Ranking: SQLite's FTS5 full-text index when the linked SQLite has it (checked
once per process by creating an FTS5 table in a scratch in-memory database;
the builds of CPython and Debian's libsqlite3 have had it for years, and it is
what this project uses: SQLite 3.40 here). The index is an external-content
FTS5 table over text and tags, tokenised by `porter unicode61
remove_diacritics 2` (stemming, case and accent folding) and kept in step by
triggers. A query becomes its distinct words (at most 64), each quoted and
joined with OR, so any shared word can match and the user's text is never
read as FTS5 syntax. `score` is `-bm25(memories_fts, 1.0, 0.5)` (FTS5's bm25
is lower-is-better; tags weigh half as much as text), rounded to 4 decimals.
Where FTS5 is missing (or `MemoryStore(path, backend="bm25")`), the same
API ranks with Okapi BM25 in Python (`textutil.LuceneBM25` over `textutil.tokenize` of
text and tags), the index rebuilt after each change (this store's, or another
connection's, seen through `PRAGMA data_version`). Scores of the two
backends are both "higher is better" but not comparable with each other.
A file written by one backend can be opened by the other: opening with FTS5
builds the index if it is missing (a file whose FTS5 index exists cannot be
written on a SQLite without FTS5, since the triggers need the module).

Scoping: a store holds one owner's memories. A file store suits a server with
one user (stdio: whoever started it); `SessionStores` gives each MCP session of
a shared server its own private store, gone with the session.

Caps: a store holds at most `max_count` memories (default MAX_COUNT, 1,000) and `max_bytes` bytes of text and
tags in UTF-8 (default MAX_BYTES, 4 MiB); `remember` past either raises `MemoryFull` (a ValueError) and stores
nothing. Each session of a server has its own store (`SessionStores`), so these are per session there.

Concurrency: one connection per store, shared by all threads of the process
(`check_same_thread=False`) and serialised by a re-entrant lock around every
statement, so a store may be used from many threads at once.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import threading
import weakref
from functools import lru_cache

from .textutil import STOP_WORDS, LuceneBM25, tokenize, words

MAX_QUERY_TERMS = 64
MAX_COUNT = 1000  # memories in one store
MAX_BYTES = 4 * 1024 * 1024  # UTF-8 bytes of text and tags in one store


class MemoryFull(ValueError):
    """A memory that would take a store past one of its caps: nothing was stored."""


@lru_cache(maxsize=1)
def fts5_available() -> bool:
    """Whether the linked SQLite has the FTS5 extension."""
    probe = sqlite3.connect(":memory:")
    try:
        probe.execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        probe.close()


class MemoryStore:
    """See the module docstring."""

    def __init__(self, path: str = ":memory:", backend: str | None = None, max_count: int = MAX_COUNT,
                 max_bytes: int = MAX_BYTES):
        self.max_count, self.max_bytes = max_count, max_bytes
        backend = "bm25" if backend == "rank_bm25" else backend  # its name when rank_bm25 computed it
        if backend not in (None, "fts5", "bm25"):
            raise ValueError("backend must be 'fts5', 'bm25' or None (FTS5 when available)")
        if backend == "fts5" and not fts5_available():
            raise ValueError("this SQLite build has no FTS5")
        self.path = path
        self.backend = backend or ("fts5" if fts5_available() else "bm25")
        self._lock = threading.RLock()
        if path not in (":memory:", ""):  # "" is a private temporary database
            _create_private(path)
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=5.0)
        self._version = 0  # bumped on every change; the BM25 index is rebuilt when it is stale
        self._bm25: tuple[tuple, list[tuple], LuceneBM25 | None] | None = None
        with self._lock, self._db:
            if path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS memories (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                             "text TEXT NOT NULL, tags TEXT NOT NULL DEFAULT '[]', created_at TEXT NOT NULL)")
            if self.backend == "fts5":
                self._create_fts()

    def _create_fts(self) -> None:
        exists = self._db.execute("SELECT 1 FROM sqlite_master WHERE name = 'memories_fts'").fetchone()
        self._db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(text, tags, "
                         "content='memories', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')")
        self._db.execute("CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN "
                         "INSERT INTO memories_fts(rowid, text, tags) VALUES (new.id, new.text, new.tags); END")
        self._db.execute("CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN "
                         "INSERT INTO memories_fts(memories_fts, rowid, text, tags) "
                         "VALUES ('delete', old.id, old.text, old.tags); END")
        self._db.execute("CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE ON memories BEGIN "
                         "INSERT INTO memories_fts(memories_fts, rowid, text, tags) "
                         "VALUES ('delete', old.id, old.text, old.tags); "
                         "INSERT INTO memories_fts(rowid, text, tags) VALUES (new.id, new.text, new.tags); END")
        if not exists:  # a file written without the index (or a new one): index what is there
            self._db.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")

    # -- writing ---------------------------------------------------------------------------------
    def remember(self, text: str, tags: list[str] | None = None) -> int:
        if not isinstance(text, str) or not text.strip():
            raise ValueError("a memory needs some text")
        if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)):
            raise ValueError("tags must be a list of strings")
        created = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        tags_json = json.dumps(tags or [], ensure_ascii=False)
        size = len(text.encode("utf-8", "surrogatepass")) + len(tags_json.encode("utf-8", "surrogatepass"))
        if size > self.max_bytes:  # refused before any statement: a huge text never reaches the database
            raise MemoryFull(f"a memory of {size} bytes is over this store's limit of {self.max_bytes} bytes")
        with self._lock, self._db:
            count, used = self._db.execute("SELECT COUNT(*), COALESCE(SUM(LENGTH(CAST(text AS BLOB)) + "
                                           "LENGTH(CAST(tags AS BLOB))), 0) FROM memories").fetchone()
            if count >= self.max_count:
                raise MemoryFull(f"this store holds {count} memories, its limit (forget some first)")
            if used + size > self.max_bytes:
                raise MemoryFull(f"this store holds {used} bytes of memories; {size} more would pass its limit "
                                 f"of {self.max_bytes} bytes (forget some first)")
            cursor = self._db.execute("INSERT INTO memories (text, tags, created_at) VALUES (?, ?, ?)",
                                      (text, tags_json, created))
            self._version += 1
            return int(cursor.lastrowid)

    def forget(self, memory_id: int) -> bool:
        with self._lock, self._db:
            deleted = self._db.execute("DELETE FROM memories WHERE id = ?", (memory_id,)).rowcount > 0
            self._version += 1
            return deleted

    # -- reading ---------------------------------------------------------------------------------
    def get(self, memory_id: int) -> dict | None:
        with self._lock:
            row = self._db.execute("SELECT id, text, tags, created_at FROM memories WHERE id = ?",
                                   (memory_id,)).fetchone()
        return None if row is None else _entry(row)

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM memories").fetchone()[0])

    def search(self, query: str, limit: int = 5) -> list[dict]:
        """Memories relevant to `query`, best first: [{id, text, tags, score, createdAt}]."""
        if not isinstance(query, str):
            raise ValueError("query must be a string")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError("limit must be a positive integer")
        if self.backend == "fts5":
            return self._search_fts(query, limit)
        return self._search_bm25(query, limit)

    def _search_fts(self, query: str, limit: int) -> list[dict]:
        terms = list(dict.fromkeys(w for w in words(query) if w not in STOP_WORDS))[:MAX_QUERY_TERMS]
        if not terms:
            return []
        match = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
        with self._lock:
            rows = self._db.execute(
                "SELECT m.id, m.text, m.tags, m.created_at, bm25(memories_fts, 1.0, 0.5) AS rank "
                "FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid "
                "WHERE memories_fts MATCH ? ORDER BY rank, m.id LIMIT ?", (match, limit)).fetchall()
        return [_entry(row[:4], -float(row[4])) for row in rows]

    def _search_bm25(self, query: str, limit: int) -> list[dict]:
        terms = tokenize(query)
        if not terms:
            return []
        with self._lock:
            # PRAGMA data_version changes when another connection (another process) commits to the file.
            version = (self._version, self._db.execute("PRAGMA data_version").fetchone()[0])
            if self._bm25 is None or self._bm25[0] != version:
                rows = self._db.execute("SELECT id, text, tags, created_at FROM memories ORDER BY id").fetchall()
                docs = [tokenize(r[1] + " " + " ".join(json.loads(r[2]))) for r in rows]
                self._bm25 = (version, rows, LuceneBM25(docs) if any(docs) else None)
            _, rows, bm25 = self._bm25
        if bm25 is None:
            return []
        scores = bm25.get_scores(terms)
        ranked = sorted((i for i in range(len(rows)) if scores[i] > 0), key=lambda i: (-scores[i], rows[i][0]))
        return [_entry(rows[i], float(scores[i])) for i in ranked[:limit]]

    # -- lifetime --------------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SessionStores:
    """One private in-memory MemoryStore per owner (an MCP session), made on first use.

    For a server several clients reach (Streamable HTTP) and that knows no user:
    each session sees only what it remembered itself. The stores are held weakly,
    so a session's memories go when the server lets go of the session.
    """

    def __init__(self, max_count: int = MAX_COUNT, max_bytes: int = MAX_BYTES) -> None:
        self.max_count, self.max_bytes = max_count, max_bytes
        self._stores: dict[int, MemoryStore] = {}  # by id(owner): owners need not be hashable
        self._lock = threading.RLock()  # _drop may run from garbage collection inside for_owner

    def for_owner(self, owner: object) -> MemoryStore:
        with self._lock:
            store = self._stores.get(id(owner))
            if store is None:
                store = self._stores[id(owner)] = MemoryStore(":memory:", max_count=self.max_count,
                                                              max_bytes=self.max_bytes)
                # Dropped (and closed) when the owner goes, before its id can be handed out again.
                weakref.finalize(owner, self._drop, id(owner))
            return store

    def _drop(self, key: int) -> None:
        with self._lock:
            store = self._stores.pop(key, None)
        if store is not None:
            store.close()

    def __len__(self) -> int:
        return len(self._stores)


def _create_private(path: str) -> None:
    """Create the database file readable by its owner alone (0600) unless it exists already.

    Memories are personal data; SQLite would create the file under the umask (usually
    world-readable), and it gives the -wal and -shm files the database file's mode.
    An existing file keeps the mode its owner gave it.
    """
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))


def _entry(row: tuple, score: float | None = None) -> dict:
    entry = {"id": row[0], "text": row[1], "tags": json.loads(row[2]), "createdAt": row[3]}
    if score is not None:
        entry["score"] = round(score, 4)
    return entry
