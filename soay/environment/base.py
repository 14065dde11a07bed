"""What every API environment offers, whatever its domain.

The pipeline (sampling, ground truth, verification) and the HTTP clone only talk to this
protocol, so a second domain plugs in by implementing it next to its spec.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from soay.spec import ApiSpec


class ApiCallError(Exception):
    """A call the API itself rejects (bad or missing arguments); the HTTP clone maps it to 4xx."""


class SpecDispatch:
    """`call` and `api_functions` for an environment whose methods carry its spec's API names.

    Arguments are checked against the spec before the method runs, so every domain rejects an
    unknown API, an unexpected argument or a missing required one with the same clear message.
    """

    spec: ApiSpec

    def call(self, api: str, **kwargs: Any) -> Any:
        if api not in self.spec.by_name:
            raise ApiCallError(f"unknown API {api!r}; the APIs are {', '.join(self.spec.api_names)}")
        spec_api = self.spec.api(api)
        unexpected = sorted(set(kwargs) - {p.name for p in spec_api.params})
        if unexpected:
            raise ApiCallError(f"{api} got unexpected argument(s) {', '.join(unexpected)}; it takes {spec_api.signature()}")
        missing = [p.name for p in spec_api.params if p.required and kwargs.get(p.name) is None]
        if missing:
            raise ApiCallError(f"{api} is missing required argument(s) {', '.join(missing)}")
        return getattr(self, api)(**kwargs)

    def api_functions(self) -> dict[str, Callable[..., Any]]:
        """The bound API methods; they validate their own arguments, so they are safe to expose."""
        return {name: getattr(self, name) for name in self.spec.api_names}


def positional_functions(spec: ApiSpec, call: Callable[..., Any]) -> dict[str, Callable[..., Any]]:
    """The spec's APIs as callables that `call(name, **kwargs)`, taking positional arguments too
    (in the spec's parameter order), as generated code may write `searchMovie("Heat")`."""

    def bind(name: str) -> Callable[..., Any]:
        api = spec.api(name)
        params = [p.name for p in api.params]

        def fn(*args: Any, **kwargs: Any) -> Any:
            if len(args) > len(params):
                raise ApiCallError(f"{name} takes at most {len(params)} arguments ({api.signature()})")
            return call(name, **dict(zip(params, args)), **kwargs)

        fn.__name__ = name
        return fn

    return {name: bind(name) for name in spec.api_names}


@runtime_checkable
class Environment(Protocol):
    """An API environment over one corpus.

    The API methods carry the spec's API names and parameter names, and return JSON-compatible
    values only (dicts, lists, str, int, float, bool, None), so a result is the same in-process,
    through the HTTP clone, and inside the sandbox.
    """

    spec: ApiSpec

    def call(self, api: str, **kwargs: Any) -> Any:
        """Call an API by name; raises ApiCallError on unknown APIs or bad arguments."""

    def api_functions(self) -> dict[str, Callable[..., Any]]:
        """The spec's APIs as plain callables, keyed by API name (what the sandbox exposes)."""

    def sample_entity(self, entity: str, rng: random.Random) -> str:
        """A uniformly random entity id of the given entity type."""

    def head_inputs(self, api: str, entity_id: str) -> dict[str, str]:
        """The values a person would type into head API `api` to find this entity.

        Keys are the API's parameter names (e.g. name, organization, interest). Values are
        what the corpus holds, so a query instantiated with them is answerable.
        """

    def head_record(self, api: str, entity_id: str) -> dict[str, Any]:
        """The record head API `api` returns for this entity when it is the right match."""

    def close(self) -> None:
        """Release the underlying connection."""
