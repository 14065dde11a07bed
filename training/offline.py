"""vLLM's offline engine in the training jobs: the generating engine SoAyEval scores a checkpoint
with, and the question encoder (the base as a pooling runner) the heads are fitted and
evaluated on (soay/question_encoder.py says how it reads a question)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from cluster.library_logs import starting
from retriever.embeddings import Embedder
from soay.prompts import question_text
from soay.question_encoder import encoder_engine_args
from training.feature_cache import FeatureCache

IN_PROCESS_ENV = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
"""vLLM's switch for an engine core in the calling process (vLLM reads it when it builds the engine)."""


@contextmanager
def offline_llm(model_dir: Path, in_process: bool = True, **engine_args: Any) -> Iterator[Any]:
    """vLLM's offline engine on the checkpoint, its engine core stopped on leaving.

    Left to the garbage collector, the engine lives until interpreter exit, and tearing it down
    there races the teardown of everything else in the process (Ray's workers, torch threads).

    `in_process` runs the engine core in this process: a separate one re-imports torch and vLLM
    before it loads anything, 30 s to start the 2-layer test model on 2 cores against 9 s
    in-process, same features. The switch is set while the engine is built only: a Ray cluster or
    `vllm serve` started later from this process would inherit it, and their async engines need
    the separate process. The engine's start-up lines (torch's from C++ among them) go to the
    library log when a command routes library output (cluster/library_logs.py).
    """
    # On the CPU build "gpu_memory_utilization" is the share of host memory vLLM reserves; a
    # small model needs little, and the sandbox and Ray share the machine.
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    with starting("vllm: offline engine"), _environment(IN_PROCESS_ENV if in_process else {}):
        from vllm import LLM  # vLLM is heavy, and its import writes start-up lines of its own

        llm = LLM(model=str(model_dir), dtype="float32", enforce_eager=True, seed=0, gpu_memory_utilization=0.3, **engine_args)
    try:
        yield llm
    finally:
        llm.llm_engine.engine_core.shutdown()


@contextmanager
def encoder(base_dir: Path, max_model_len: int = 256) -> Iterator[Any]:
    """vLLM's offline pooling engine on the base, stopped on leaving."""
    with starting():  # vLLM's import writes start-up lines of its own
        from vllm.config import PoolerConfig

    args = encoder_engine_args(max_model_len)
    args["pooler_config"] = PoolerConfig(**args["pooler_config"])
    with offline_llm(base_dir, **args) as llm:  # max_model_len among the args
        yield llm


def encode(
    llm: Any, queries: list[str], batch_size: int = 64, desc: str = "encode", vocabulary: frozenset[str] = frozenset(),
    sentences: Embedder | None = None, cache: FeatureCache | None = None,
) -> np.ndarray:
    """Feature vectors of the questions (masked as the planner reads them), with a progress bar:
    the base's, followed by the sentence encoder's (a retriever Embedder) when one is given. With a
    `cache` (of these encoders) only the masked texts it lacks are encoded, and then kept in it."""
    texts = [question_text(q, vocabulary) for q in queries]
    known = cache.get(texts) if cache is not None else {}
    todo = [t for t in dict.fromkeys(texts) if t not in known]
    fresh: dict[str, np.ndarray] = {}
    with tqdm(total=len(todo), desc=desc if not known else f"{desc} ({len(known)} known)", unit="q", mininterval=2.0) as bar:
        for i in range(0, len(todo), batch_size):
            batch = todo[i : i + batch_size]
            base = np.asarray([o.outputs.embedding for o in llm.embed(batch, use_tqdm=False)], dtype=np.float32)
            vectors = np.hstack([base, sentences.encode(batch)]) if sentences is not None else base
            fresh.update(zip(batch, vectors))
            bar.update(len(batch))
    if cache is not None and fresh:
        cache.put(fresh)
    every = {**known, **fresh}
    return np.vstack([every[t] for t in texts]).astype(np.float32) if texts else np.zeros((0, 0), dtype=np.float32)


def sentence_encoder(name: str | None) -> Embedder | None:
    """The retriever's embedding model by name (soay/heads.py `sentence_encoder`), or None."""
    return Embedder(name) if name else None


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """os.environ with `values` set inside the block, and all of it restored as it was after it:
    also what vLLM sets while it builds an engine, which processes started later must not inherit."""
    saved = dict(os.environ)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
