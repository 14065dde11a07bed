"""How one API call of an imported spec becomes an HTTP request, and its answer a result.

The binding written by `soay spec import` beside the spec says it: for OpenAPI the method, the
path and where each argument goes; for GraphQL the query document. Errors are sorted here into
the caller's mistakes (4xx, GraphQL errors: reported, never retried) and the service's
trouble (429, 5xx, time-outs: retried by the environment).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import yaml

from soay.environment.base import ApiCallError


class TransientError(Exception):
    """The service could not answer now (429, 5xx, a time-out or a dropped connection)."""


def load_binding(spec_path: str | Path, binding_path: str | Path | None = None) -> dict[str, Any]:
    """The binding beside an imported spec (`<name>.binding.yaml`), or the one named."""
    spec_path = Path(spec_path)
    path = Path(binding_path) if binding_path else spec_path.with_name(f"{spec_path.stem}.binding.yaml")
    if not path.is_file():
        raise FileNotFoundError(f"no binding at {path}: import the API with `soay spec import` to write one")
    binding = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(binding, dict) or binding.get("protocol") not in ("openapi", "graphql"):
        raise ValueError(f"{path} is not a binding written by `soay spec import`")
    return binding


def build_request(client: httpx.Client, binding: dict[str, Any], api: str, kwargs: dict[str, Any]) -> httpx.Request:
    entry = binding["apis"].get(api)
    if entry is None:
        raise ApiCallError(f"{api} has no binding (re-import the API)")
    if binding["protocol"] == "graphql":
        return client.build_request("POST", binding.get("endpoint", "/graphql"), json={"query": entry["query"], "variables": kwargs})
    path = entry["path"]
    query: dict[str, Any] = {}
    body: dict[str, Any] = {}
    for name, value in kwargs.items():
        where = entry["params"].get(name, "body")
        if where == "path":
            path = path.replace("{" + name + "}", quote(str(value), safe=""))
        elif where == "query":
            query[name] = value
        else:
            body[name] = value
    method = entry["method"]
    return client.build_request(method, path, params=query or None, json=body if (body or method != "GET") else None)


def read_response(binding: dict[str, Any], api: str, response: httpx.Response) -> Any:
    """The result of a call, or the error it is."""
    if response.status_code == 429 or response.status_code >= 500:
        raise TransientError(f"HTTP {response.status_code}")
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code >= 400:
        message = body.get("error") or body.get("detail") if isinstance(body, dict) else None
        raise ApiCallError(f"{api}: {message or response.text[:300]} (HTTP {response.status_code})")
    if binding["protocol"] == "graphql":
        if not isinstance(body, dict):
            raise ApiCallError(f"{api}: the GraphQL endpoint did not answer JSON (HTTP {response.status_code})")
        if body.get("errors"):
            raise ApiCallError(f"{api}: {'; '.join(str(e.get('message', e)) for e in body['errors'])}")
        return (body.get("data") or {}).get(binding["apis"][api]["field"])
    if body is None and response.content:
        raise ApiCallError(f"{api}: the answer is not JSON")
    return body
