"""The retriever as a Ray Serve deployment; the serving app calls `search` through a handle.

Concurrent queries are embedded together (`serve.batch`): one forward pass over a batch costs
little more than over one query, so a replica keeps up under load. The model runs on one worker
thread, which keeps the event loop free and never shares the tokenizer between threads.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from ray import serve
from ray.serve.deployment import Application

from retriever.documents import KINDS
from retriever.embeddings import Embedder
from retriever.index import RetrieverIndex
from soay.mentions import mask_question
from soay.settings import Settings

MAX_K = 100
MAX_QUERY_CHARS = 4000
"""Far beyond any question; the model reads at most 256 tokens, longer input only costs time."""


@serve.deployment(ray_actor_options={"num_cpus": 1}, max_ongoing_requests=64)
class RetrieverDeployment:
    """Loads an index directory written by `soay index` and answers nearest-neighbour searches."""

    def __init__(self, index_dir: str, device: str = "auto", nprobe: int = 16, tuned_encoder: str | None = None) -> None:
        """`tuned_encoder`: the served heads model's tuned sentence encoder (training/tune_encoder.py),
        loaded now rather than on the first question that names it."""
        self.index = RetrieverIndex.load(Path(index_dir), device, nprobe)
        self.index.embedder.encode(["warm up"])  # load the model now, not on the first request
        self.device = device
        self.tuned: dict[str, Embedder] = {}
        if tuned_encoder:
            self._tuned(tuned_encoder)
        self.model_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed")

    async def search(self, query: str, k: int = 5, kind: str | None = "exemplar") -> list[dict[str, Any]]:
        """Hits best first, each {kind, score, query, solution, code, language, text, ...payload}.

        Bad arguments raise ValueError with a message meant for the caller (a 4xx upstream).
        """
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must be a non-empty string")
        if len(query) > MAX_QUERY_CHARS:
            raise ValueError(f"query is longer than {MAX_QUERY_CHARS} characters")
        if not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise ValueError(f"k must be an integer from 1 to {MAX_K}")
        if kind is not None and kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)} or None")
        vector = await self._embed(mask_question(query))  # as the index's questions are
        return [hit.to_dict() for hit in self.index.search_vectors(vector, k, kind)[0]]

    async def embed(self, text: str, tuned_encoder: str | None = None) -> list[float]:
        """The sentence vectors of `text` as given (the caller masks it) that a heads planner reads
        beside the base's features (soay/heads.py): the index model's, then that of the heads'
        tuned encoder when the caller names one. The caller names it with each request, so that
        while a rollout swaps models every ingress replica gets its own heads' vectors."""
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_QUERY_CHARS:
            raise ValueError(f"text must be a non-empty string of at most {MAX_QUERY_CHARS} characters")
        return (await self._embed_heads((text, tuned_encoder))).tolist()

    def meta(self) -> dict[str, Any]:
        """What the replica serves: model, counts, dataset version (for health pages and run records)."""
        return {**self.index.meta, "counts": self.index.counts}

    @serve.batch(max_batch_size=32, batch_wait_timeout_s=0.002)
    async def _embed(self, queries: list[str]) -> list[np.ndarray]:
        return list(await asyncio.get_running_loop().run_in_executor(self.model_thread, self.index.embedder.encode, queries))

    @serve.batch(max_batch_size=32, batch_wait_timeout_s=0.002)
    async def _embed_heads(self, requests: list[tuple[str, str | None]]) -> list[np.ndarray]:
        def encode() -> list[np.ndarray]:
            vectors = list(self.index.embedder.encode([text for text, _ in requests]))
            for path in {p for _, p in requests if p}:
                rows = [i for i, (_, p) in enumerate(requests) if p == path]
                for i, tuned in zip(rows, self._tuned(path).encode([requests[i][0] for i in rows])):
                    vectors[i] = np.concatenate([vectors[i], tuned])
            return vectors

        return await asyncio.get_running_loop().run_in_executor(self.model_thread, encode)

    def _tuned(self, path: str) -> Embedder:
        """A tuned encoder by its directory, loaded once (a rollout briefly serves two)."""
        if path not in self.tuned:
            self.tuned[path] = Embedder(path, self.device)
            self.tuned[path].encode(["warm up"])
        return self.tuned[path]


def retriever_app(settings: Settings, tuned_encoder: str | None = None) -> Application:
    """The deployment bound to the configured index directory, device and search breadth, and to
    the heads' tuned sentence encoder when the served model has one."""
    r = settings.retriever
    options = settings.serve.rollout_options()  # a model swap drops no request (serving/rollout.py)
    return RetrieverDeployment.options(**options).bind(str(r.index_path(settings.data)), r.device, r.nprobe, tuned_encoder)
