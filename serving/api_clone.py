"""HTTP clone of a domain's APIs (for AMiner: the seven academic APIs), built from its spec.

`POST /api/<apiName>` with the parameters as a JSON object answers what the in-process
environment returns, so generated code behaves the same against either. Every route, request
model and error comes from the spec: a second domain gets its clone for free.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from pydantic import BaseModel, ConfigDict, Field, RootModel, create_model

from serving.http_limits import BodySizeLimit
from soay.environment.base import ApiCallError, Environment
from soay.spec import Api, ApiSpec, Attribute

_PY_TYPES: dict[str, Any] = {"str": str, "int": int, "float": float, "bool": bool, "list[str]": list[str]}


def request_model(api: Api) -> type[BaseModel]:
    """The pydantic body model of one API: its parameters, typed, nothing else allowed."""
    fields: dict[str, Any] = {}
    for p in api.params:
        typ = str if p.ref else _PY_TYPES[p.type]
        info = Field(description=p.description) if p.required else Field(None, description=p.description)
        fields[p.name] = (typ if p.required else typ | None, info)
    return create_model(f"{api.name}Request", __config__=ConfigDict(extra="forbid", strict=True), **fields)


class ApiError(BaseModel):
    """The body of every 4xx the clone answers."""

    error: str


def response_model(api: Api) -> Any:
    """The type of what one API returns, with the spec's attribute descriptions.

    It is what makes the clone's OpenAPI document say as much as the spec (shape, types,
    descriptions), so that importing the document (`soay spec import`) gives the spec back.
    Attributes are optional: a record may lack a value (a movie with no director).
    """
    if api.returns == "values":
        attr = api.attributes[0]
        item = _PY_TYPES[attr.type.removeprefix("list[").removesuffix("]")] if attr.type.startswith("list[") else _PY_TYPES.get(attr.type, str)
        # the attribute's name travels as the schema's title
        namespace = {"__doc__": attr.description, "model_config": ConfigDict(title=attr.name)}
        return type(f"{api.name}Values", (RootModel[list[item]],), namespace)  # type: ignore[valid-type]
    record = _record_model(f"{api.name}Record", api.attributes, api.description)
    return list[record] if api.returns == "records" else record


def _record_model(name: str, attributes: tuple[Attribute, ...], description: str) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for a in attributes:
        if a.type == "records":
            typ: Any = list[_record_model(f"{name}_{a.name}", a.attributes, a.description)]  # type: ignore[misc]
        else:
            typ = str if a.ref else _PY_TYPES[a.type]
        fields[a.name] = (typ | None, Field(None, description=a.description))
    return create_model(name, __doc__=description, **fields)


def create_app(spec: ApiSpec, open_env: Callable[[], Environment], max_body_bytes: int = 65_536) -> Any:
    """The ASGI app. `open_env` is called once per worker thread (SQLite connections are per thread)."""
    app = FastAPI(title=f"{spec.domain} API clone", description=spec.description)
    local = threading.local()
    registry = CollectorRegistry()
    calls = Counter("api_clone_requests_total", "API calls by API and status", ["api", "status"], registry=registry)
    latency = Histogram("api_clone_latency_seconds", "API call latency", ["api"], registry=registry)

    def env() -> Environment:
        if not hasattr(local, "env"):
            local.env = open_env()
        return local.env

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [f"{'.'.join(str(x) for x in e['loc'] if x != 'body') or 'body'}: {e['msg']}" for e in exc.errors()]
        status = 400 if any(e["type"] == "json_invalid" for e in exc.errors()) else 422
        api = request.url.path.rsplit("/", 1)[-1]
        calls.labels(api, str(status)).inc()
        return JSONResponse({"error": "; ".join(errors)}, status_code=status)

    # the service's own routes stay out of the OpenAPI document, which describes the APIs only
    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict[str, str]:
        return {"status": "ok", "domain": spec.domain}

    @app.get("/spec", include_in_schema=False)
    def get_spec() -> dict[str, Any]:
        return spec.model_dump(mode="json")

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> PlainTextResponse:
        return PlainTextResponse(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    for api in spec.apis:
        _add_route(app, api, env, calls, latency)

    @app.api_route("/api/{name}", methods=["GET", "POST", "PUT", "DELETE", "PATCH"], include_in_schema=False)
    def unknown(name: str) -> JSONResponse:
        status, msg = (405, f"use POST for {name}") if name in spec.by_name else (404, f"no API named {name!r}")
        calls.labels("unknown" if status == 404 else name, str(status)).inc()
        return JSONResponse({"error": msg, "apis": list(spec.api_names)}, status_code=status)

    return BodySizeLimit(app, max_body_bytes)


def _add_route(app: FastAPI, api: Api, env: Callable[[], Environment], calls: Counter, latency: Histogram) -> None:
    model = request_model(api)

    def endpoint(body: BaseModel) -> Any:
        start = time.perf_counter()
        try:
            result = env().call(api.name, **body.model_dump(exclude_none=True))
        except ApiCallError as e:
            calls.labels(api.name, "400").inc()
            return JSONResponse({"error": str(e)}, status_code=400)
        latency.labels(api.name).observe(time.perf_counter() - start)
        calls.labels(api.name, "200").inc()
        return result

    # the body type is only known at run time; FastAPI reads it from the annotations
    endpoint.__annotations__ = {"body": model, "return": Any}
    app.add_api_route(
        f"/api/{api.name}",
        endpoint,
        methods=["POST"],
        name=api.name,
        operation_id=api.name,
        summary=api.name,
        description=api.description,
        response_model=response_model(api),
        responses={400: {"model": ApiError, "description": "the API rejects the arguments"}},
    )
