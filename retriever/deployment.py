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
from retriever.index import RetrieverIndex
from soay.mentions import mask_question
from soay.settings import Settings

MAX_K = 100
MAX_QUERY_CHARS = 4000
"""Far beyond any question; the model reads at most 256 tokens, longer input only costs time."""


@serve.deployment(name="retriever", ray_actor_options={"num_cpus": 1}, max_ongoing_requests=64)
class RetrieverDeployment:
    """Loads an index directory written by `soay index` and answers nearest-neighbour searches."""

    def __init__(self, index_dir: str, device: str = "auto", nprobe: int = 16) -> None:
        self.index = RetrieverIndex.load(Path(index_dir), device, nprobe)
        self.index.embedder.encode(["warm up"])  # load the model now, not on the first request
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

    async def embed(self, text: str) -> list[float]:
        """The model's vector of `text` as given (the caller masks it): what a heads planner reads
        beside the base's features (soay/heads.py `sentence_encoder`)."""
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_QUERY_CHARS:
            raise ValueError(f"text must be a non-empty string of at most {MAX_QUERY_CHARS} characters")
        return (await self._embed(text)).tolist()

    def meta(self) -> dict[str, Any]:
        """What the replica serves: model, counts, dataset version (for health pages and run records)."""
        return {**self.index.meta, "counts": self.index.counts}

    @serve.batch(max_batch_size=32, batch_wait_timeout_s=0.002)
    async def _embed(self, queries: list[str]) -> list[np.ndarray]:
        vectors = await asyncio.get_running_loop().run_in_executor(
            self.model_thread, self.index.embedder.encode, queries
        )
        return list(vectors)


def retriever_app(settings: Settings) -> Application:
    """The deployment bound to the configured index directory, device and search breadth."""
    r = settings.retriever
    options = settings.serve.rollout_options()  # a model swap drops no request (serving/rollout.py)
    return RetrieverDeployment.options(**options).bind(index_dir=str(r.index_path(settings.data)), device=r.device, nprobe=r.nprobe)
