"""The triplet dataset on disk: shards (JSONL or Parquet) listed in a versioned manifest.

Every writer adds a new version of shards and rewrites the manifest atomically, so a reader
(training, evaluation, the enlargement loop) always sees a complete dataset, and a version
number says exactly which data a model was trained on.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from soay.files import atomic_path, atomic_write_text
from soay.triplets import Triplet

MANIFEST = "manifest.json"
ShardFormat = Literal["jsonl", "parquet"]
_JSON_COLUMNS = ("combination", "inputs", "answer")


class Shard(BaseModel):
    path: str
    split: str
    count: int
    sha256: str
    version: int
    format: ShardFormat


class Manifest(BaseModel):
    domain: str
    version: int = 0
    created: str = ""
    updated: str = ""
    shards: list[Shard] = Field(default_factory=list)
    sources: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """What produced each version (settings, spec and intents hashes, generation stats)."""

    def counts(self) -> dict[str, int]:
        c: Counter = Counter()
        for s in self.shards:
            c[s.split] += s.count
        return dict(c)


def load_manifest(root: Path) -> Manifest:
    path = Path(root) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"no dataset at {root} (missing {MANIFEST}); run `soay generate` first")
    return Manifest.model_validate_json(path.read_text(encoding="utf-8"))


class VersionWriter:
    """A new version of the dataset at `root`, written as its triplets arrive: each split's go to
    shards of `shard_size`, a shard written as soon as it is full, so that memory holds at most one
    shard per split however many triplets a job makes (a million-triplet generation streams). The
    manifest names the version only at `commit`; until then readers see the versions before it."""

    def __init__(self, root: Path, domain: str, shard_size: int = 5000, fmt: ShardFormat = "jsonl") -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.manifest = load_manifest(self.root) if (self.root / MANIFEST).is_file() else Manifest(domain=domain, created=_now())
        if self.manifest.domain != domain:
            raise ValueError(f"dataset at {self.root} is for domain {self.manifest.domain!r}, not {domain!r}")
        self.version = self.manifest.version + 1
        self.shard_size, self.fmt = shard_size, fmt
        self.count = 0
        self._buffers: dict[str, list[Triplet]] = {}
        self._written: Counter = Counter()
        self._shards: list[Shard] = []
        stale = self.root / f"v{self.version:04d}"
        if stale.is_dir():  # shards of a job that died before its commit: no manifest names them
            shutil.rmtree(stale)

    def add(self, triplet: Triplet) -> None:
        buffer = self._buffers.setdefault(triplet.split, [])
        buffer.append(triplet)
        self.count += 1
        if len(buffer) >= self.shard_size:
            self._flush(triplet.split)

    def _flush(self, split: str) -> None:
        items, self._buffers[split] = self._buffers[split], []
        rel = f"v{self.version:04d}/{split}-{self._written[split]:05d}.{self.fmt}"
        self._written[split] += 1
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_shard(path, items, self.fmt)
        self._shards.append(Shard(path=rel, split=split, count=len(items), sha256=_sha256(path), version=self.version, format=self.fmt))

    def commit(self, source: dict[str, Any]) -> Manifest:
        """Write the last shards and the manifest that names them (atomically): the version exists."""
        for split in sorted(self._buffers):
            if self._buffers[split]:
                self._flush(split)
        self.manifest.version = self.version
        self.manifest.updated = _now()
        self.manifest.shards.extend(sorted(self._shards, key=lambda shard: shard.path))
        self.manifest.sources[str(self.version)] = source
        atomic_write_text(self.root / MANIFEST, self.manifest.model_dump_json(indent=2))
        return self.manifest


def write_version(
    root: Path,
    domain: str,
    triplets: Iterable[Triplet],
    source: dict[str, Any],
    shard_size: int = 5000,
    fmt: ShardFormat = "jsonl",
) -> Manifest:
    """Append a new version of shards to the dataset at `root` (created if absent)."""
    writer = VersionWriter(root, domain, shard_size, fmt)
    for triplet in triplets:
        writer.add(triplet)
    return writer.commit(source)


def iter_triplets(root: Path, split: str | None = None, verify: bool = False) -> Iterator[Triplet]:
    """All triplets of the dataset (optionally one split), checking shard hashes if asked."""
    root = Path(root)
    for shard in load_manifest(root).shards:
        if split is not None and shard.split != split:
            continue
        path = root / shard.path
        if verify and _sha256(path) != shard.sha256:
            raise ValueError(f"shard {shard.path} does not match its manifest checksum")
        yield from _read_shard(path, shard.format)


def _write_shard(path: Path, triplets: list[Triplet], fmt: ShardFormat) -> None:
    rows = [t.model_dump(mode="json") for t in triplets]
    if fmt == "jsonl":
        atomic_write_text(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    for row in rows:
        for col in _JSON_COLUMNS:
            row[col] = json.dumps(row[col], ensure_ascii=False)
    with atomic_path(path) as tmp:
        pq.write_table(pa.Table.from_pylist(rows), tmp)


def _read_shard(path: Path, fmt: str) -> Iterator[Triplet]:
    if fmt == "jsonl":
        with open(path, encoding="utf-8") as f:
            for line in f:
                yield Triplet.model_validate_json(line)
    else:
        import pyarrow.parquet as pq

        for row in pq.read_table(path).to_pylist():
            for col in _JSON_COLUMNS:
                row[col] = json.loads(row[col])
            yield Triplet.model_validate(row)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
