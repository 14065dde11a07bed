"""Question features kept on disk, so that a retraining encodes only the questions it has not seen.

Refitting the heads is one pass of the base (and the sentence model) over every distinct masked
training question, minutes on 2 cores, while a round of the learning loop adds a few hundred: the
features of a masked question depend only on its text and the encoders, so they are stored by
that text under a namespace naming the encoders (the base's directory, the sentence model, the
longest question). SQLite: one file, safe for one writer and concurrent readers.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np


class FeatureCache:
    """Masked question text -> float32 feature vector, in one namespace of one SQLite file."""

    def __init__(self, path: Path, namespace: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, timeout=60)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS features (namespace TEXT, text TEXT, vector BLOB, PRIMARY KEY (namespace, text))")
        self.namespace = namespace

    def get(self, texts: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(texts))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            rows = self.db.execute(
                f"SELECT text, vector FROM features WHERE namespace = ? AND text IN ({','.join('?' * len(part))})", [self.namespace, *part])
            found.update((text, np.frombuffer(blob, dtype=np.float32)) for text, blob in rows)
        return found

    def put(self, vectors: dict[str, np.ndarray]) -> None:
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO features VALUES (?, ?, ?)",
                                [(self.namespace, text, np.asarray(v, dtype=np.float32).tobytes()) for text, v in vectors.items()])

    def close(self) -> None:
        self.db.close()
