"""The FAISS index of the retriever: one inner-product index per document kind, saved as a directory.

A kind per index keeps filtering exact and cheap (no over-fetching then dropping other kinds) and
lets long-term memory grow by `add` without touching the exemplars. Vectors are unit length, so
inner product is cosine similarity. Small indexes are exact (IndexFlatIP); from ANN_MIN_VECTORS on,
`index_type` may pick IVF or HNSW. With faiss-gpu and a CUDA device the same indexes move to the
GPU; nothing else changes.

Directory layout: meta.json (model, dim, counts, dataset version, ...), and per kind
<kind>.faiss (faiss.write_index) and <kind>.jsonl (the documents, in vector order).
"""

from __future__ import annotations

import json
import math
import os
import shutil
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from retriever.documents import KINDS, Document
from retriever.embeddings import Embedder
from soay.mentions import mask_question

META = "meta.json"
ANN_MIN_VECTORS = 1000
"""Below this many vectors exact search is already fast and an IVF could not be trained well."""


@dataclass(frozen=True)
class Hit:
    kind: str
    score: float
    text: str
    payload: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """A flat record with the same keys for every kind (None where a kind has no such field)."""
        fixed = {key: self.payload.get(key) for key in ("query", "solution", "code", "language")}
        return {**self.payload, **fixed, "kind": self.kind, "score": self.score, "text": self.text}


def gpu_available() -> bool:
    """True when this faiss build has GPU support and sees a CUDA device."""
    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


@cache
def _gpu_resources() -> Any:
    return faiss.StandardGpuResources()


class RetrieverIndex:
    """Documents of every kind with their vectors; searched by text (through the embedder) or by vector."""

    def __init__(
        self,
        dim: int,
        model: str,
        index_type: str = "flat",
        nprobe: int = 16,
        device: str = "auto",
        embedder: Embedder | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        if index_type not in ("flat", "ivf", "hnsw"):
            raise ValueError(f"unknown index type {index_type!r} (flat, ivf, hnsw)")
        self.dim, self.model, self.index_type, self.nprobe, self.device = dim, model, index_type, nprobe, device
        self.meta = dict(meta or {})
        self.indexes: dict[str, faiss.Index] = {}
        self.documents: dict[str, list[Document]] = {}
        if embedder is not None:
            self.embedder = embedder

    @cached_property
    def embedder(self) -> Embedder:
        """The model the index was built with; queries must be embedded by the same one."""
        return Embedder(self.model, self.device)

    @property
    def counts(self) -> dict[str, int]:
        return {kind: len(self.documents.get(kind, ())) for kind in KINDS}

    def add(self, documents: list[Document]) -> None:
        """Embed and append documents, e.g. a newly verified trace (long-term memory)."""
        self.add_vectors(documents, self.embedder.encode([d.text for d in documents]))

    def add_vectors(self, documents: list[Document], vectors: np.ndarray) -> None:
        """Append documents with their precomputed unit vectors (an index build, a benchmark)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.shape != (len(documents), self.dim):
            raise ValueError(f"expected {len(documents)} vectors of dim {self.dim}, got {vectors.shape}")
        for kind in KINDS:
            rows = [i for i, d in enumerate(documents) if d.kind == kind]
            if not rows:
                continue
            if kind not in self.indexes:
                self.indexes[kind] = self._new_index(vectors[rows])
                self.documents[kind] = []
            self.indexes[kind].add(vectors[rows])
            self.documents[kind].extend(documents[i] for i in rows)

    def search(self, query: str, k: int = 5, kind: str | None = None) -> list[Hit]:
        """The k documents nearest to `query` (of one kind, or of all), best first."""
        if not query.strip():
            raise ValueError("empty query")
        return self.search_vectors(self.embedder.encode([mask_question(query)]), k, kind)[0]

    def search_vectors(self, vectors: np.ndarray, k: int = 5, kind: str | None = None) -> list[list[Hit]]:
        """Batched search by unit vectors: one best-first hit list per row."""
        if k < 1:
            raise ValueError(f"k must be at least 1, not {k}")
        if kind is not None and kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r} ({', '.join(KINDS)})")
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        found: list[list[Hit]] = [[] for _ in range(len(vectors))]
        for name in [kind] if kind else KINDS:
            index = self.indexes.get(name)
            if index is None or index.ntotal == 0:
                continue
            scores, ids = index.search(vectors, min(k, index.ntotal))
            docs = self.documents[name]
            for row, (row_scores, row_ids) in enumerate(zip(scores, ids)):
                found[row].extend(
                    Hit(name, float(s), docs[i].text, docs[i].payload) for s, i in zip(row_scores, row_ids) if i >= 0
                )
        return [sorted(hits, key=lambda h: -h.score)[:k] for hits in found]

    def save(self, path: Path, **meta: Any) -> None:
        """Write the index directory (replacing any old one only once the new one is complete)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.meta.update(meta)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for kind, index in self.indexes.items():
            faiss.write_index(faiss.index_gpu_to_cpu(index) if _on_gpu(index) else index, str(tmp / f"{kind}.faiss"))
            with open(tmp / f"{kind}.jsonl", "w", encoding="utf-8") as f:
                f.writelines(d.model_dump_json() + "\n" for d in self.documents[kind])
        record = {
            **self.meta,
            "model": self.model,
            "dim": self.dim,
            "index_type": self.index_type,
            "counts": self.counts,
        }
        (tmp / META).write_text(json.dumps(record, indent=2, ensure_ascii=False), encoding="utf-8")
        old = path.with_name(f".{path.name}.old")
        if path.exists():
            shutil.rmtree(old, ignore_errors=True)
            path.rename(old)
        tmp.rename(path)
        shutil.rmtree(old, ignore_errors=True)

    @classmethod
    def load(
        cls, path: Path, device: str = "auto", nprobe: int = 16, embedder: Embedder | None = None
    ) -> RetrieverIndex:
        """Read an index directory written by `save`."""
        path = Path(path)
        if not (path / META).is_file():
            raise FileNotFoundError(f"no retriever index at {path} (missing {META}); run `soay index` first")
        meta = json.loads((path / META).read_text(encoding="utf-8"))
        loaded = cls(meta["dim"], meta["model"], meta["index_type"], nprobe, device, embedder, meta)
        for kind in KINDS:
            if not (path / f"{kind}.faiss").is_file():
                continue
            index = faiss.read_index(str(path / f"{kind}.faiss"))
            if index.d != loaded.dim:
                raise ValueError(f"{path / kind}.faiss has dim {index.d}, meta.json says {loaded.dim}")
            with open(path / f"{kind}.jsonl", encoding="utf-8") as f:
                loaded.documents[kind] = [Document.model_validate_json(line) for line in f]
            if len(loaded.documents[kind]) != index.ntotal:
                raise ValueError(f"{path / kind}.jsonl does not match {kind}.faiss ({index.ntotal} vectors)")
            loaded.indexes[kind] = loaded._place(index)
        return loaded

    def _new_index(self, sample: np.ndarray) -> faiss.Index:
        """An empty index for a kind, trained on its first vectors when approximate."""
        n = len(sample)
        if self.index_type == "flat" or n < ANN_MIN_VECTORS:
            return self._place(faiss.IndexFlatIP(self.dim))
        if self.index_type == "hnsw":
            return self._place(faiss.index_factory(self.dim, "HNSW32,Flat", faiss.METRIC_INNER_PRODUCT))
        # faiss's rule of thumb: ~4*sqrt(n) lists, and at least 39 training vectors per list
        nlist = max(1, min(int(4 * math.sqrt(n)), n // 39))
        index = faiss.index_factory(self.dim, f"IVF{nlist},Flat", faiss.METRIC_INNER_PRODUCT)
        index.train(sample)
        return self._place(index)

    def _place(self, index: faiss.Index) -> faiss.Index:
        """Set search breadth, and move to the GPU when one is there (HNSW has no GPU version)."""
        if isinstance(index, faiss.IndexIVF):
            index.nprobe = self.nprobe
        if isinstance(index, faiss.IndexHNSW):
            index.hnsw.efSearch = 4 * self.nprobe
            return index
        if self.device != "cpu" and gpu_available():
            return faiss.index_cpu_to_gpu(_gpu_resources(), 0, index)
        return index


def _on_gpu(index: faiss.Index) -> bool:
    return hasattr(faiss, "GpuIndex") and isinstance(index, faiss.GpuIndex)
