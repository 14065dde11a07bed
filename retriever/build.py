"""The index build (`soay index`): documents embedded by a pool of Ray actors, indexed by the driver.

Embedding is the whole cost of a build, and it shards: each actor loads the model once and takes
chunks of texts; vectors come back through the object store, so the same code runs on this
machine and on a cluster with GPU workers. The driver then adds them to FAISS, which is quick.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import ray
from ray.util import ActorPool
from tqdm import tqdm

from cluster.ray_runtime import init_ray
from retriever.documents import Document, collect_documents
from retriever.embeddings import Embedder
from retriever.index import RetrieverIndex
from soay.dataset import load_manifest
from soay.domains import domain_for
from soay.settings import RetrieverSettings, Settings

CHUNK = 256
"""Texts per Ray task: large enough to batch well on the model, small enough for steady progress."""


@dataclass
class BuildReport:
    path: Path
    counts: dict[str, int]
    dataset_version: int
    seconds: float
    workers: int
    model: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "path": str(self.path), "seconds": round(self.seconds, 2)}


@ray.remote(num_cpus=1)
class EmbeddingWorker:
    """Holds one copy of the embedding model for the life of the build."""

    def __init__(self, settings: RetrieverSettings) -> None:
        self.embedder = Embedder(settings.model, settings.device, settings.batch_size)

    def dim(self) -> int:
        return self.embedder.dim

    def embed(self, start: int, texts: list[str]) -> tuple[int, np.ndarray]:
        return start, self.embedder.encode(texts)


def embed_on_ray(texts: list[str], settings: RetrieverSettings, workers: int, show_progress: bool = True) -> np.ndarray:
    """(len(texts), dim) vectors, in order, embedded by `workers` actors (fewer if there is little to do)."""
    on_gpu = settings.device != "cpu" and ray.cluster_resources().get("GPU", 0) > 0
    size = max(1, min(CHUNK, math.ceil(len(texts) / workers)))  # a small build still uses every worker
    chunks = [(start, texts[start : start + size]) for start in range(0, len(texts), size)]
    actors = [
        EmbeddingWorker.options(num_gpus=1 if on_gpu else 0).remote(settings)
        for _ in range(max(1, min(workers, len(chunks))))
    ]
    try:
        dim = ray.get(actors[0].dim.remote())
        vectors = np.zeros((len(texts), dim), dtype=np.float32)
        results = ActorPool(actors).map_unordered(lambda actor, chunk: actor.embed.remote(*chunk), chunks)
        with tqdm(total=len(texts), desc="embed", unit="doc", disable=not show_progress, mininterval=1.0) as bar:
            for start, block in results:
                vectors[start : start + len(block)] = block
                bar.update(len(block))
    finally:
        for actor in actors:
            ray.kill(actor)
    return vectors


def build_index(
    settings: Settings,
    dataset: Path | None = None,
    out: Path | None = None,
    traces: Path | None = None,
    show_progress: bool = True,
) -> BuildReport:
    """Embed the domain's API docs, the dataset's train split and the trace log; write the index dir."""
    r = settings.retriever
    dataset = Path(dataset or settings.data.dataset_path())
    out = Path(out or r.index_path(settings.data))
    traces = Path(traces or r.traces_path(settings.data))
    version = load_manifest(dataset).version
    documents: list[Document] = collect_documents(domain_for(settings).spec, dataset, traces)

    start = time.perf_counter()
    ray_address = init_ray(settings.ray)
    vectors = embed_on_ray([d.text for d in documents], r, settings.ray.workers, show_progress)
    # the driver only writes the index; whoever loads it places it on their own device
    index = RetrieverIndex(vectors.shape[1], r.model, r.index_type, r.nprobe, device="cpu")
    index.add_vectors(documents, vectors)
    seconds = time.perf_counter() - start
    index.save(
        out,
        domain=settings.data.domain,
        dataset=str(dataset),
        dataset_version=version,
        traces=str(traces),
        built=datetime.now(UTC).isoformat(timespec="seconds"),
        build_seconds=round(seconds, 2),
        ray_address=ray_address,
    )
    return BuildReport(out, index.counts, version, seconds, settings.ray.workers, r.model)
