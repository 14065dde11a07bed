"""Swagger 2.0 documents read in OpenAPI 3.0 shape.

Many public APIs still publish Swagger 2.0. The two describe the same things in different
places (definitions vs components/schemas, `in: body` parameters vs requestBody, a response's
`schema` vs its `content`), so the document is rewritten once into 3.0 shape and the one
OpenAPI reader does the rest. No converter library is installed here (prance's converter calls
a web service), and the part of 2.0 the importer reads is small enough to map by hand.
"""

from __future__ import annotations

import copy
from typing import Any

_REF_PREFIXES = {
    "#/definitions/": "#/components/schemas/",
    "#/parameters/": "#/components/parameters/",
    "#/responses/": "#/components/responses/",
}
_SCHEMA_KEYS = ("type", "format", "items", "enum", "default", "minimum", "maximum", "pattern", "minLength", "maxLength",
                "minItems", "maxItems", "uniqueItems", "multipleOf", "exclusiveMinimum", "exclusiveMaximum")
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")
_JSON = "application/json"


def is_swagger2(content: dict[str, Any]) -> bool:
    return str(content.get("swagger", "")).startswith("2")


def to_openapi3(content: dict[str, Any]) -> dict[str, Any]:
    """The same API in OpenAPI 3.0 shape; `$ref`s to definitions, parameters and responses follow."""
    doc = _rewrite_refs(copy.deepcopy(content))
    produces = doc.get("produces") or [_JSON]
    consumes = doc.get("consumes") or [_JSON]
    shared_params = doc.get("parameters") or {}
    shared_responses = doc.get("responses") or {}
    out: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": doc.get("info") or {"title": "", "version": ""},
        "servers": _servers(doc),
        "paths": {},
        "components": {
            "schemas": doc.get("definitions") or {},
            "securitySchemes": {k: _security_scheme(v) for k, v in (doc.get("securityDefinitions") or {}).items()},
        },
    }
    if "security" in doc:
        out["security"] = doc["security"]
    for path, item in (doc.get("paths") or {}).items():
        out["paths"][path] = _path_item(item, produces, consumes, shared_params, shared_responses)
    return out


def _rewrite_refs(value: Any) -> Any:
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str):
            for old, new in _REF_PREFIXES.items():
                if ref.startswith(old):
                    value["$ref"] = new + ref[len(old):]
        for key, item in value.items():
            if key not in ("example", "examples", "x-example"):
                _rewrite_refs(item)
    elif isinstance(value, list):
        for item in value:
            _rewrite_refs(item)
    return value


def _servers(doc: dict[str, Any]) -> list[dict[str, str]]:
    """`schemes`, `host` and `basePath` as one server URL (https first when both are offered)."""
    base = doc.get("basePath") or ""
    host = doc.get("host")
    if not host:
        return [{"url": base}] if base else []
    schemes = doc.get("schemes") or ["https"]
    scheme = "https" if "https" in schemes else schemes[0]
    return [{"url": f"{scheme}://{host}{base}"}]


def _security_scheme(scheme: dict[str, Any]) -> dict[str, Any]:
    kind = scheme.get("type")
    if kind == "basic":
        return {"type": "http", "scheme": "basic", "description": scheme.get("description", "")}
    if kind == "oauth2":
        flow = {"implicit": "implicit", "password": "password", "application": "clientCredentials",
                "accessCode": "authorizationCode"}.get(scheme.get("flow", ""), "implicit")
        body = {k: scheme[k] for k in ("authorizationUrl", "tokenUrl") if k in scheme}
        return {"type": "oauth2", "flows": {flow: {**body, "scopes": scheme.get("scopes") or {}}}}
    return dict(scheme)


def _resolve(param: Any, shared: dict[str, Any]) -> Any:
    """A `#/components/parameters/X` reference (after rewriting) read inline: a body parameter
    cannot stay a reference in 3.0, where bodies are no parameters."""
    if isinstance(param, dict) and isinstance(param.get("$ref"), str) and param["$ref"].startswith("#/components/parameters/"):
        return copy.deepcopy(shared.get(param["$ref"].rsplit("/", 1)[-1], param))
    return param


def _path_item(item: dict[str, Any], produces: list[str], consumes: list[str], shared_params: dict[str, Any],
               shared_responses: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    common = [_resolve(p, shared_params) for p in item.get("parameters") or []]
    plain_common = [_parameter(p) for p in common if not _is_body(p)]
    if plain_common:
        out["parameters"] = plain_common
    for method in _METHODS:
        op = item.get(method)
        if isinstance(op, dict):
            out[method] = _operation(op, common, produces, consumes, shared_params, shared_responses)
    return out


def _is_body(param: Any) -> bool:
    return isinstance(param, dict) and param.get("in") in ("body", "formData")


def _operation(op: dict[str, Any], common: list[Any], produces: list[str], consumes: list[str],
               shared_params: dict[str, Any], shared_responses: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in op.items() if k not in ("parameters", "responses", "produces", "consumes", "schemes")}
    params = [_resolve(p, shared_params) for p in op.get("parameters") or []]
    out["parameters"] = [_parameter(p) for p in params if not _is_body(p)]
    bodies = [p for p in params + common if _is_body(p)]
    if bodies:
        out["requestBody"] = _request_body(bodies, op.get("consumes") or consumes)
    media = op.get("produces") or produces
    out["responses"] = {str(code): _response(_resolve_response(r, shared_responses), media)
                        for code, r in (op.get("responses") or {}).items()}
    return out


def _parameter(param: Any) -> Any:
    """A 2.0 query/path/header parameter: its type, format, items and enum move into `schema`."""
    if not isinstance(param, dict) or "$ref" in param:
        return param
    out = {k: v for k, v in param.items() if k not in _SCHEMA_KEYS and k not in ("collectionFormat", "allowEmptyValue")}
    schema = {k: param[k] for k in _SCHEMA_KEYS if k in param}
    if schema.get("type") == "file":
        schema = {"type": "string", "format": "binary"}
    out["schema"] = schema or {"type": "string"}
    return out


def _request_body(bodies: list[dict[str, Any]], consumes: list[str]) -> dict[str, Any]:
    body = next((p for p in bodies if p.get("in") == "body"), None)
    if body is not None:
        media = _JSON if any("json" in c for c in consumes) or not consumes else consumes[0]
        return {"required": bool(body.get("required")), "description": body.get("description", ""),
                "content": {media: {"schema": body.get("schema") or {}}}}
    form = {p["name"]: _parameter(p)["schema"] for p in bodies if "name" in p}
    required = [p["name"] for p in bodies if p.get("required") and "name" in p]
    schema: dict[str, Any] = {"type": "object", "properties": form}
    if required:
        schema["required"] = required
    media = "multipart/form-data" if any("multipart" in c for c in consumes) else "application/x-www-form-urlencoded"
    return {"required": bool(required), "content": {media: {"schema": schema}}}


def _resolve_response(response: Any, shared: dict[str, Any]) -> Any:
    if isinstance(response, dict) and isinstance(response.get("$ref"), str) and response["$ref"].startswith("#/components/responses/"):
        return copy.deepcopy(shared.get(response["$ref"].rsplit("/", 1)[-1], response))
    return response


def _response(response: Any, produces: list[str]) -> Any:
    if not isinstance(response, dict) or "$ref" in response:
        return response
    out = {"description": response.get("description", "")}
    if "schema" in response:
        json_like = [m for m in produces if "json" in m]
        media = json_like[0] if json_like else (produces[0] if produces else _JSON)
        out["content"] = {media: {"schema": response["schema"]}}
    return out
