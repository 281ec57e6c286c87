"""A persistent memory store for the RetrieveMemories preprocessor: SQLite with FTS5 ranking.

Memories live in one SQLite file (":memory:" for tests); search ranks with
FTS5's built-in bm25(). The query is reduced to its words joined by OR, so any
shared word can match and the user's text can never be read as FTS syntax.
One connection, guarded by a lock, serves the whole process.
"""

from __future__ import annotations

import datetime as dt
import re
import sqlite3
import threading

from .retrieval import tokens


class MemoryStore:
    def __init__(self, path: str = ":memory:"):
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False)
        with self._lock, self._db:
            self._db.execute("CREATE TABLE IF NOT EXISTS memories (id INTEGER PRIMARY KEY, text TEXT NOT NULL, "
                             "tags TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL)")
            self._db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(text, tags, "
                             "content='memories', content_rowid='id')")
            self._db.execute("CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN "
                             "INSERT INTO memories_fts(rowid, text, tags) VALUES (new.id, new.text, new.tags); END")

    def remember(self, text: str, tags: list[str] | None = None) -> int:
        if not text.strip():
            raise ValueError("a memory needs some text")
        created = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        with self._lock, self._db:
            cur = self._db.execute("INSERT INTO memories (text, tags, created_at) VALUES (?, ?, ?)",
                                   (text, " ".join(tags or ()), created))
            return int(cur.lastrowid)

    def search(self, query: str, limit: int = 5) -> list[dict]:
        words = [re.sub(r"[^a-z0-9]", "", w) for w in tokens(query)]
        words = [w for w in words if w]
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in dict.fromkeys(words))
        with self._lock:
            rows = self._db.execute(
                "SELECT m.id, m.text, m.created_at, bm25(memories_fts) AS rank FROM memories_fts "
                "JOIN memories m ON m.id = memories_fts.rowid WHERE memories_fts MATCH ? ORDER BY rank, m.id LIMIT ?",
                (match, limit)).fetchall()
        # bm25() is lower-is-better and negative; report a positive score, higher is better.
        return [{"id": r[0], "text": r[1], "createdAt": r[2], "score": round(-float(r[3]), 4)} for r in rows]

    def forget(self, memory_id: int) -> bool:
        with self._lock, self._db:
            row = self._db.execute("SELECT text, tags FROM memories WHERE id = ?", (memory_id,)).fetchone()
            if row is None:
                return False
            self._db.execute("INSERT INTO memories_fts(memories_fts, rowid, text, tags) VALUES ('delete', ?, ?, ?)",
                             (memory_id, row[0], row[1]))
            self._db.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
            return True

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM memories").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
