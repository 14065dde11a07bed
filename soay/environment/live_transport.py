"""How one API call of an imported spec becomes an HTTP request, and its answer a result.

The binding written by `soay spec import` beside the spec says it: for OpenAPI the method, the
path and where (and under which name) each argument goes; for GraphQL the query document; for
both, how the answer holds the records (a page's `results`, a single nested object) and how the
API key is sent (a header, a query parameter, a bearer token). Errors are sorted here into
the caller's mistakes (4xx, GraphQL errors: reported, never retried) and the service's
trouble (429, 5xx, time-outs: retried by the environment).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
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


def build_request(client: httpx.Client, binding: dict[str, Any], api: str, kwargs: dict[str, Any], key: str | None = None) -> httpx.Request:
    """The HTTP request of one call; `key` is the API key, sent as the binding's `auth` says."""
    entry = binding["apis"].get(api)
    if entry is None:
        raise ApiCallError(f"{api} has no binding (re-import the API)")
    headers, secret_query = auth_for(binding, api, key)
    headers = {**(entry.get("headers") or {}), **headers}
    names = entry.get("names") or {}
    if binding["protocol"] == "graphql":
        variables = {names.get(k, k): v for k, v in kwargs.items()}
        return client.build_request("POST", binding.get("endpoint", "/graphql"), json={"query": entry["query"], "variables": variables},
                                    headers=headers or None, params=secret_query or None)
    path = entry["path"]
    query: dict[str, Any] = dict(secret_query)
    body: dict[str, Any] = {}
    for name, value in kwargs.items():
        where, sent_as = _where(entry, name)
        if where == "path":
            text = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
            path = path.replace("{" + sent_as + "}", quote(text, safe=","))
        elif where == "query":
            query[sent_as] = value
        else:
            body[sent_as] = value
    method = entry["method"]
    return client.build_request(method, path, params=query or None, json=body if (body or method != "GET") else None,
                                headers=headers or None)


def _where(entry: dict[str, Any], name: str) -> tuple[str, str]:
    """Where an argument goes and under which name: the spec's name, or the document's when a
    person restored it in the spec (`names` maps spec names to the document's)."""
    names = entry.get("names") or {}
    if name in entry["params"]:
        return entry["params"][name], names.get(name, name)
    for spec_name, sent_as in names.items():
        if sent_as == name and spec_name in entry["params"]:
            return entry["params"][spec_name], sent_as
    return "body", name


def api_key(binding: dict[str, Any], setting: str | None = None) -> str | None:
    """The key to send: the `live_api.api_key` setting, else the environment variable the binding names."""
    if setting:
        return setting
    env = (binding.get("auth") or {}).get("env")
    return os.environ.get(env) or None if env else None


def auth_for(binding: dict[str, Any], api: str, key: str | None) -> tuple[dict[str, str], dict[str, str]]:
    """(headers, query parameters) that carry the key for one call, per the document's first
    security scheme the API accepts; nothing when there is no key or the API needs none."""
    schemes = (binding.get("auth") or {}).get("schemes") or []
    own = (binding["apis"].get(api) or {}).get("auth")
    if not key or not schemes or own is False:
        return {}, {}
    if isinstance(own, list):
        schemes = [s for s in schemes if s.get("scheme") in own] or schemes
    scheme = schemes[0]
    kind = scheme.get("type")
    if kind == "apiKey":
        if scheme.get("in") == "query":
            return {}, {scheme["name"]: key}
        if scheme.get("in") == "cookie":
            return {"Cookie": f"{scheme['name']}={key}"}, {}
        return {scheme["name"]: key}, {}
    if kind == "basic":
        return {"Authorization": "Basic " + base64.b64encode(key.encode()).decode()}, {}
    return {"Authorization": f"Bearer {key}"}, {}


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
    entry = binding["apis"][api]
    if binding["protocol"] == "graphql":
        if not isinstance(body, dict):
            raise ApiCallError(f"{api}: the GraphQL endpoint did not answer JSON (HTTP {response.status_code})")
        if body.get("errors"):
            raise ApiCallError(f"{api}: {'; '.join(str(e.get('message', e)) for e in body['errors'])}")
        body = (body.get("data") or {}).get(entry["field"])
    elif body is None and response.content:
        raise ApiCallError(f"{api}: the answer is not JSON")
    return rename(reshape(unwrap(body, entry.get("unwrap")), entry.get("nested")), entry.get("fields"))


def unwrap(body: Any, held: str | None) -> Any:
    """The records a page holds (`{"page": 1, "results": [...]}` -> the results)."""
    if not held or not isinstance(body, dict):
        return body
    return body.get(held)


def rename(result: Any, fields: dict[str, str] | None) -> Any:
    """Fields under the spec's names (`{"candidate_id": "id"}`: the answer's `id` is the spec's `candidate_id`)."""

    def one(out: dict[str, Any]) -> dict[str, Any]:
        for spec_name, answer_name in fields.items():
            if answer_name in out and spec_name not in out:
                out[spec_name] = out.pop(answer_name)
        return out

    return _each_record(result, one) if fields else result


def reshape(result: Any, nested: dict[str, str] | None) -> Any:
    """Nested records as the spec reads them: a single object as a list of one record, a
    connection as its list (`{"filmConnection": {"films": [...]}}` -> `{"filmConnection": [...]}`),
    and references lifted from deeper (`from:actions.damage.damage_type`: every damage type of
    every action, one list; soay/importers/nesting.py)."""

    def one(out: dict[str, Any]) -> dict[str, Any]:
        lifted = {attr: _gather(out, holder[len(LIFTED):])
                  for attr, holder in nested.items() if holder.startswith(LIFTED)}
        for attr, holder in nested.items():
            value = out.get(attr)
            if value is None or holder.startswith(LIFTED):
                continue
            if holder == "one":
                out[attr] = value if isinstance(value, list) else [value]
            elif isinstance(value, dict):
                out[attr] = value.get(holder)
        out.update(lifted)
        return out

    return _each_record(result, one) if nested else result


LIFTED = "from:"
"""A holder that names where in the answer a lifted reference is (dotted paths, comma-separated)."""


def _gather(record: dict[str, Any], paths: str) -> list[dict[str, Any]]:
    """The objects at the end of each dotted path, through lists and single objects, once each."""
    found: list[dict[str, Any]] = []
    for path in paths.split(","):
        level: list[Any] = [record]
        for step in path.split("."):
            items = [x for v in level for x in (v if isinstance(v, list) else [v])]
            level = [d.get(step) for d in items if isinstance(d, dict) and d.get(step) is not None]
        for v in level:
            for item in v if isinstance(v, list) else [v]:
                if isinstance(item, dict) and item not in found:
                    found.append(item)
    return found


def _each_record(result: Any, change: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """`change` applied to a copy of the record, or of each record of a list (lists of lists too);
    anything else as it is."""
    if isinstance(result, list):
        return [_each_record(r, change) for r in result]
    return change(dict(result)) if isinstance(result, dict) else result
