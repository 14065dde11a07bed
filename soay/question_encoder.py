"""How a heads model reads a question: the base checkpoint its directory links to, run as vLLM's
pooling runner (mean of the last layer). Shared by training, which encodes offline
(training/offline.py), and serving, which runs the same engine as a Ray Serve LLM deployment
(serving/llm.py), so that what the heads are fitted on is what they read when served."""

from __future__ import annotations

from typing import Any

BASE_LINK = "base"
"""The model directory's link to the base checkpoint: the encoder (pooling) and the writing coder."""
POOLER = {"pooling_type": "MEAN", "use_activation": False}
"""Mean over the question's tokens of the last layer, not normalised: the heads standardize."""


def encoder_engine_args(max_model_len: int) -> dict[str, Any]:
    """vLLM engine arguments of the question encoder (offline in training, Ray Serve LLM in serving)."""
    return {"runner": "pooling", "convert": "embed", "max_model_len": max_model_len, "pooler_config": dict(POOLER)}
