"""The durable request log: every record a user's request makes is on disk before the request is answered.

Why a local outbox: the users' questions and verdicts are the enlargement loop's raw material, and
neither a broker restart (the embedded Tansu keeps its topics in memory), a broker outage nor a
killed ingress replica may lose them. So a record is first committed to a SQLite file in WAL mode
with `synchronous=FULL` (fsync'd at each commit) under the data root, shared by the ingress
replicas of one node, and only a shipper (serving/logstream.py) moves it to Kafka.

A row is `pending` until Kafka acknowledged it, then `shipped` with its partition and offset. It
leaves the file only when it is safe: at once when the brokers are durable
(`kafka.durable_broker`, a replicated Kafka cluster), or, with the in-memory broker, once the
enlargement said it is in the dataset (a `Consumed` record naming this outbox's `uid` and the row
ids, soay/logs.py). A broker that lost its log puts every shipped row back to pending (`reship`),
and so does a row shipped long ago that nobody acknowledged (`reship_stale`); it is sent again, and
the enlargement de-duplicates by request id, so a record shipped twice never enters the dataset twice.

The file is bounded (`kafka.outbox_records`): when it is full the service refuses new questions
with 503 rather than answer one it cannot log.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

PENDING, SHIPPED = 0, 1
BUSY_TIMEOUT_S = 30.0
"""How long a writer waits for another process's transaction (the replicas share the file)."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    topic TEXT NOT NULL,
    key BLOB NOT NULL,
    value BLOB NOT NULL,
    state INTEGER NOT NULL DEFAULT 0,
    partition INTEGER,
    offset INTEGER,
    created REAL NOT NULL,
    shipped_at REAL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS records_state ON records (state, id);
CREATE INDEX IF NOT EXISTS records_shipped ON records (topic, partition, offset) WHERE state = 1;
"""


@dataclass(frozen=True)
class OutboxRecord:
    """One record as the shipper sends it: the row id travels as a header, the key is the request id."""

    id: int
    topic: str
    key: bytes
    value: bytes


@dataclass(frozen=True)
class Shipped:
    """Where Kafka put a record."""

    id: int
    partition: int
    offset: int


class OutboxFull(Exception):
    """The outbox holds `capacity` records: nothing more is taken until the shipper drains it."""


class Outbox:
    """A SQLite outbox; each instance has its own connection, usable from any thread of its owner."""

    def __init__(self, path: Path, capacity: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.capacity = path, capacity
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        with self._lock:
            self._db.executescript(SCHEMA)
            self._db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('uid', ?)", (uuid.uuid4().hex,))
            self.uid: str = self._db.execute("SELECT value FROM meta WHERE key = 'uid'").fetchone()[0]
            """Names this outbox in the records it ships, so an acknowledgement finds its way back."""

    def put(self, topic: str, key: bytes, value: bytes) -> int:
        """Commit one record (fsync'd) and return its id; OutboxFull at capacity."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if self._count() >= self.capacity:
                    raise OutboxFull(f"the request log outbox holds {self.capacity} records not yet safe in Kafka")
                row = self._db.execute(
                    "INSERT INTO records (topic, key, value, created) VALUES (?, ?, ?, ?)", (topic, key, value, time.time())
                ).lastrowid
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        return int(row)

    def count(self, state: int | None = None) -> int:
        """Records held, or those in one state."""
        with self._lock:
            if state is None:
                return self._count()
            return self._db.execute("SELECT COUNT(*) FROM records WHERE state = ?", (state,)).fetchone()[0]

    def pending(self, limit: int) -> list[OutboxRecord]:
        """The oldest records Kafka has not acknowledged."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, topic, key, value FROM records WHERE state = 0 ORDER BY id LIMIT ?", (limit,)
            ).fetchall()
        return [OutboxRecord(*row) for row in rows]

    def shipped(self, records: list[Shipped], keep: bool) -> None:
        """Kafka acknowledged these: kept as shipped (until consumed) or, with durable brokers, gone."""
        with self._lock, self._db:
            if keep:
                self._db.executemany(
                    "UPDATE records SET state = 1, partition = ?, offset = ?, shipped_at = ? WHERE id = ?",
                    [(r.partition, r.offset, time.time(), r.id) for r in records],
                )
            else:
                self._db.executemany("DELETE FROM records WHERE id = ?", [(r.id,) for r in records])

    def shipped_partitions(self) -> dict[tuple[str, int], int]:
        """(topic, partition) -> the highest offset of a record shipped there and not yet released."""
        with self._lock:
            rows = self._db.execute(
                "SELECT topic, partition, MAX(offset) FROM records WHERE state = 1 GROUP BY topic, partition"
            ).fetchall()
        return {(topic, partition): offset for topic, partition, offset in rows}

    def forget(self, ids: list[int]) -> int:
        """Drop records the enlargement made durable (shipped, or pending again after a reship: the
        copy it read is enough); returns how many."""
        with self._lock, self._db:
            return self._db.executemany("DELETE FROM records WHERE id = ?", [(i,) for i in ids]).rowcount

    def reship(self) -> int:
        """Put every shipped record back to pending: the broker lost its log (a restarted in-memory
        broker loses all of it at once). Returns how many."""
        with self._lock, self._db:
            return self._db.execute("UPDATE records SET state = 0, partition = NULL, offset = NULL WHERE state = 1").rowcount

    def reship_stale(self, older_than_s: float) -> int:
        """Put back to pending the records shipped more than `older_than_s` ago and still not
        acknowledged: their acknowledgement, or they themselves, went missing. Returns how many."""
        with self._lock, self._db:
            return self._db.execute(
                "UPDATE records SET state = 0, partition = NULL, offset = NULL WHERE state = 1 AND shipped_at < ?",
                (time.time() - older_than_s,),
            ).rowcount

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM records").fetchone()[0]
