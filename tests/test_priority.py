"""The engines' lower OS priority (serving/priority.py), taken in a real Ray worker process the
way an engine replica takes it: the variable from its runtime environment, the step in its
Ray Serve LLM callback before the engine starts."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from serving.llm import EngineReplicaSetup, llm_config
from serving.priority import NICE_ENV, engine_env_vars
from soay.settings import ServeSettings


def test_the_engine_config_carries_the_step_only_when_asked():
    assert engine_env_vars(0) == {} and engine_env_vars(3) == {NICE_ENV: "3"}
    config = llm_config(ServeSettings(engine_nice=2), Path("/nowhere"), "soay-planner")
    assert config.runtime_env["env_vars"] == {NICE_ENV: "2", "VLLM_CPU_OMP_THREADS_BIND": "nobind"}
    assert NICE_ENV not in llm_config(ServeSettings(engine_nice=0), Path("/nowhere"), "soay-coder").runtime_env["env_vars"]
    assert llm_config(ServeSettings(engine_nice=2, accelerator="gpu"), Path("/nowhere"), "soay-coder").runtime_env["env_vars"] == {}


def test_the_engine_replica_callback_lowers_its_process_by_the_configured_step(local_ray, tmp_path):
    @local_ray.remote(num_cpus=0)
    class Replica:
        def setup(self, config) -> tuple[int, int]:
            before = os.nice(0)
            asyncio.run(EngineReplicaSetup(llm_config=config, ctx_kwargs={}).on_before_node_init())
            return before, os.nice(0)

    config = llm_config(ServeSettings(engine_nice=3), tmp_path, "soay-planner")
    # one after the other: two workers importing ray.serve.llm at once into a fresh cluster race in
    # its connector registry ("'MultiConnector' is already registered"), and one of them dies
    lowered = Replica.options(runtime_env=config.runtime_env).remote()
    before, after = local_ray.get(lowered.setup.remote(config))
    plain = Replica.options(runtime_env=llm_config(ServeSettings(engine_nice=0), tmp_path, "soay-coder").runtime_env).remote()
    plain_before, plain_after = local_ray.get(plain.setup.remote(config))
    assert after == min(19, before + 3) > before, (before, after)  # Ray's workers start at 15
    assert plain_after == plain_before
