"""The private names of Ray, Ray Serve LLM, DeepSpeed and vLLM the stack relies on still exist in
the installed versions, with the shape the adapters use (serving/ray_compat.py,
training/deepspeed_compat.py, training/offline.py). A failure here names what an upgrade moved."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import os
from types import SimpleNamespace

import pytest

# --- Ray Serve LLM ----------------------------------------------------------------------------


def test_ray_serve_llm_callback_base_is_where_the_adapter_takes_it_from() -> None:
    from ray.llm._internal.common.callbacks.base import CallbackBase, CallbackCtx

    from serving import ray_compat

    assert ray_compat.CallbackBase is CallbackBase
    params = inspect.signature(CallbackBase.__init__).parameters
    assert {"llm_config", "raise_error_on_callback", "ctx_kwargs"} <= set(params), list(params)
    assert inspect.iscoroutinefunction(CallbackBase.on_before_node_init)
    assert "run_init_node" in {f.name for f in dataclasses.fields(CallbackCtx)}


def test_engine_replica_setup_skips_the_node_download_of_a_local_directory(tmp_path) -> None:
    from ray.serve.llm import LLMConfig

    from serving.llm import EngineReplicaSetup

    for source, skipped in ((str(tmp_path), True), ("org/some-hub-model", False)):
        config = LLMConfig(model_loading_config={"model_id": "m", "model_source": source},
                           callback_config={"callback_class": EngineReplicaSetup})
        callback = EngineReplicaSetup(llm_config=config, ctx_kwargs={})
        asyncio.run(callback.on_before_node_init())
        assert callback.ctx.run_init_node is not skipped, source


def test_embedding_request_is_the_completion_form() -> None:
    from ray.llm._internal.serve.core.configs.openai_api_models import EmbeddingCompletionRequest

    from serving.ray_compat import embedding_request

    request = embedding_request("planner", ["who wrote it"])
    assert type(request) is EmbeddingCompletionRequest
    assert request.model == "planner" and request.input == ["who wrote it"]


def test_a_deployment_takes_a_version_through_the_internal_options() -> None:
    from ray import serve
    from ray.serve.deployment import Application, Deployment

    from serving.ray_compat import with_version

    params = inspect.signature(Deployment.options).parameters
    assert "version" in params and "_internal" in params, list(params)

    @serve.deployment
    class Echo:
        def __init__(self, word: str) -> None:
            self.word = word

    app = with_version(Echo.bind(word="a"), "v123", word="b")
    assert isinstance(app, Application)
    assert app._bound_deployment.version == "v123"
    assert app._bound_deployment.init_kwargs == {"word": "b"}


def test_a_light_stage_keeps_its_version_across_builds_until_what_it_reads_changes() -> None:
    """serving/app.py `stable`: the version a swap's rebuild gives the retriever, the executor and
    the answer composer is the one they run, unless their init arguments (or what the caller says
    they read) changed; the arguments are bound as given."""
    from ray import serve

    from serving.app import stable

    @serve.deployment
    class Echo:
        def __init__(self, word: str) -> None:
            self.word = word

    def version(app) -> str:
        return app._bound_deployment.version

    assert version(stable(Echo.bind(word="a"))) == version(stable(Echo.bind(word="a")))
    assert version(stable(Echo.bind(word="a"))) != version(stable(Echo.bind(word="b")))
    assert version(stable(Echo.bind(word="a"), "what it reads")) == version(stable(Echo.bind(word="b"), "what it reads"))
    assert stable(Echo.bind(word="b"), "what it reads")._bound_deployment.init_kwargs == {"word": "b"}


# --- DeepSpeed --------------------------------------------------------------------------------


def test_deepspeed_engine_still_consolidates_zero3_weights() -> None:
    from deepspeed.runtime.engine import DeepSpeedEngine

    method = getattr(DeepSpeedEngine, "_zero3_consolidated_16bit_state_dict", None)
    assert method is not None, "DeepSpeedEngine._zero3_consolidated_16bit_state_dict is gone"
    params = list(inspect.signature(method).parameters.values())
    assert params[0].name == "self" and all(p.default is not inspect.Parameter.empty for p in params[1:]), params
    assert callable(DeepSpeedEngine.zero_optimization_stage)


def test_consolidated_state_dict_only_under_zero3() -> None:
    from training.deepspeed_compat import consolidated_state_dict

    def engine(stage: int) -> SimpleNamespace:
        return SimpleNamespace(zero_optimization_stage=lambda: stage, _zero3_consolidated_16bit_state_dict=lambda: {"w": stage})

    assert consolidated_state_dict(engine(2)) is None
    assert consolidated_state_dict(engine(3)) == {"w": 3}


# --- vLLM -------------------------------------------------------------------------------------


def test_vllm_still_reads_the_in_process_switch() -> None:
    import vllm.envs

    from training.offline import IN_PROCESS_ENV

    assert set(IN_PROCESS_ENV) <= set(vllm.envs.environment_variables)


def test_the_in_process_switch_is_set_only_while_the_engine_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    from training.offline import IN_PROCESS_ENV, _environment

    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    monkeypatch.setenv("SOAY_COMPAT_KEPT", "1")
    with _environment(IN_PROCESS_ENV):
        assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
        os.environ["SET_BY_THE_ENGINE"] = "x"  # what the library sets while it starts does not leak
    assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in os.environ and "SET_BY_THE_ENGINE" not in os.environ
    assert os.environ["SOAY_COMPAT_KEPT"] == "1"


def test_vllm_offline_engine_can_still_be_stopped_through_its_engine_core() -> None:
    """training/offline.py stops the engine with `llm.llm_engine.engine_core.shutdown()`: vLLM's
    LLM has no shutdown of its own."""
    from vllm.entrypoints.llm import LLM
    from vllm.v1.engine.core_client import EngineCoreClient, InprocClient
    from vllm.v1.engine.llm_engine import LLMEngine

    assert "self.llm_engine" in inspect.getsource(LLM.__init__)
    assert "self.engine_core" in inspect.getsource(LLMEngine.__init__)
    assert callable(EngineCoreClient.shutdown) and callable(InprocClient.shutdown)


def test_serve_details_reads_the_controller_client_the_adapter_names() -> None:
    from ray.serve._private.client import ServeControllerClient
    from ray.serve.context import _get_global_client

    from serving import ray_compat

    assert ray_compat._get_global_client is _get_global_client
    assert "raise_if_no_controller_running" in inspect.signature(_get_global_client).parameters
    assert callable(ServeControllerClient.get_serve_details)
