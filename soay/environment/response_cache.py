"""A response cache for live APIs, on disk and shared by every process of one generation run.

Why on disk: the ground-truth oracle (the generator's process) and the verification (a forked
sandbox child per batch) make the same calls; an in-memory cache would die with each child,
and every verified triplet would cost the live API its calls twice. SQLite in WAL mode lets
several processes read and write one file safely. Only successful answers are kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

_MISSING = object()


def cache_key(api: str, kwargs: dict[str, Any]) -> str:
    """The same call gives the same key, whatever the argument order."""
    text = json.dumps([api, kwargs], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class ResponseCache:
    """get/put of JSON answers by call; `path=None` keeps them in memory for this process only."""

    def __init__(self, path: str | Path | None = None, ttl_s: float | None = None) -> None:
        self.path = Path(path) if path else None
        self.ttl_s = ttl_s
        self._memory: dict[str, Any] = {}
        self._conn: sqlite3.Connection | None = None
        self._pid = -1

    def _db(self) -> sqlite3.Connection | None:
        """One connection per process: a connection must not cross a fork."""
        if self.path is None:
            return None
        if self._conn is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("CREATE TABLE IF NOT EXISTS response (key TEXT PRIMARY KEY, body TEXT NOT NULL, at REAL NOT NULL)")
            self._pid = os.getpid()
        return self._conn

    def get(self, key: str) -> Any:
        """The cached answer, or the module's _MISSING marker (None is a valid answer)."""
        if key in self._memory:
            return self._memory[key]
        db = self._db()
        if db is None:
            return _MISSING
        row = db.execute("SELECT body, at FROM response WHERE key = ?", (key,)).fetchone()
        if row is None or (self.ttl_s is not None and time.time() - row[1] > self.ttl_s):
            return _MISSING
        value = json.loads(row[0])
        self._memory[key] = value
        return value

    def put(self, key: str, value: Any) -> None:
        self._memory[key] = value
        db = self._db()
        if db is not None:
            db.execute(
                "INSERT OR REPLACE INTO response (key, body, at) VALUES (?, ?, ?)",
                (key, json.dumps(value, ensure_ascii=False), time.time()),
            )

    @staticmethod
    def missing(value: Any) -> bool:
        return value is _MISSING

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None
