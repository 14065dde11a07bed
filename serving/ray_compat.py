"""The corners of Ray Serve and Ray Serve LLM this stack uses that have no public form, in one place.

Each is checked against the installed Ray by tests/test_compat.py, so that an upgrade that moves
or removes one fails there, by name, rather than in a running service:

- `CallbackBase`: Ray Serve LLM's hook around a replica's node initialisation (serving/llm.py
  EngineReplicaSetup skips the "download" of a local checkpoint with it); only under
  `ray.llm._internal`.
- `embedding_request`: the public `EmbeddingRequest` is a union of the completion and the chat
  form, not a class one can build; validating a completion-form body against it gives the
  completion-form class without naming it.
- `serve_details`: Serve's controller view of the applications as a plain dict. `serve.status()`
  gives the same as pydantic models whose construction cloudpickles each deployment's request
  router class: about 96 ms of CPU a call in the calling process, against 1.6 ms for the dict
  (measured on the demo application), paid by every health refresh.
- `with_version`: Serve removed the public `version` option of a deployment; its internal form
  (`_internal=True` on the bound deployment) still sets one (serving/llm.py `versioned` says why).
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter
from ray.llm._internal.common.callbacks.base import CallbackBase
from ray.serve.context import _get_global_client
from ray.serve.deployment import Application
from ray.serve.llm.openai_api_models import EmbeddingRequest

__all__ = ["CallbackBase", "embedding_request", "serve_details", "with_version"]

_EMBEDDING_REQUEST: TypeAdapter[Any] = TypeAdapter(EmbeddingRequest)


def embedding_request(model: str, texts: list[str]) -> Any:
    """An embeddings request (completion form: `input` texts) for an LLMServer handle."""
    return _EMBEDDING_REQUEST.validate_python({"model": model, "input": texts})


def with_version(app: Application, version: str, **init_kwargs: Any) -> Application:
    """`app`'s deployment bound again to `init_kwargs`, with `version` as its Serve code version."""
    return app._bound_deployment.options(version=version, _internal=True).bind(**init_kwargs)


def serve_details() -> dict[str, Any]:
    """The controller's `{"applications": {name: {"deployments": {name: {"status", "message",
    "replicas": [{"state", ...}]}}}}}`; {} while Serve is not running."""
    client = _get_global_client(raise_if_no_controller_running=False)
    return {} if client is None else client.get_serve_details()
