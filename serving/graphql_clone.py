"""A GraphQL server of a domain's APIs, built from its spec (ariadne on uvicorn).

Each API is a field of the query type, its parameters the field's arguments, its records an
object type; resolvers call the same environment as the HTTP clone. It exists to show that an
API published as GraphQL imports (`soay spec import`) into the same spec, and to be the live
service that the end-to-end test generates verified triplets through.

    python -m serving.graphql_clone --domain movies --db data/movies/corpus.sqlite --port 8310
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from typing import Any

from ariadne import QueryType, make_executable_schema
from ariadne.asgi import GraphQL
from graphql import GraphQLError
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from soay.environment.base import ApiCallError, Environment
from soay.spec import Api, ApiSpec, Attribute

_SCALARS = {"str": "String", "int": "Int", "float": "Float", "bool": "Boolean", "list[str]": "[String]"}


def _pascal(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.replace("-", "_").split("_"))


def _doc(text: str, indent: str = "") -> str:
    return f'{indent}"""{" ".join(text.split())}"""\n' if text else ""


def _type_of(a: Attribute) -> str:
    return "ID" if a.ref else _SCALARS[a.type]


def schema_sdl(spec: ApiSpec) -> str:
    """The SDL of a spec: the query type, then one object type per returned record shape."""
    types: list[str] = []

    def record_type(name: str, attributes: tuple[Attribute, ...], description: str) -> str:
        lines = []
        for a in attributes:
            if a.type == "records":
                lines.append(_doc(a.description, "  ") + f"  {a.name}: [{record_type(name + _pascal(a.name), a.attributes, a.description)}!]")
            else:
                lines.append(_doc(a.description, "  ") + f"  {a.name}: {_type_of(a)}")
        types.append(_doc(description) + f"type {name} {{\n" + "\n".join(lines) + "\n}")
        return name

    fields = []
    for api in spec.apis:
        args = ", ".join(
            f'{_doc(p.description).strip()} {p.name}: {"ID" if p.ref else _SCALARS[p.type]}{"!" if p.required else ""}'
            for p in api.params
        )
        if api.returns == "values":
            result = f"[{_SCALARS.get(api.attributes[0].type, 'String').strip('[]')}!]"
        else:
            record = record_type(_pascal(api.name) + "Record", api.attributes, api.description)
            result = f"[{record}!]" if api.returns == "records" else record
        fields.append(_doc(api.description, "  ") + f"  {api.name}({args}): {result}")
    query = _doc(spec.description) + "type Query {\n" + "\n".join(fields) + "\n}"
    return "\n\n".join([query, *types]) + "\n"


def create_graphql_app(spec: ApiSpec, open_env: Callable[[], Environment]) -> Starlette:
    """The ASGI app: GraphQL at /graphql, health at /healthz. One environment per thread."""
    local = threading.local()
    query = QueryType()

    def env() -> Environment:
        if not hasattr(local, "env"):
            local.env = open_env()
        return local.env

    def resolver(api: Api) -> Callable[..., Any]:
        def resolve(_obj: Any, _info: Any, **kwargs: Any) -> Any:
            try:
                return env().call(api.name, **{k: v for k, v in kwargs.items() if v is not None})
            except ApiCallError as e:
                raise GraphQLError(str(e)) from None

        return resolve

    for api in spec.apis:
        query.set_field(api.name, resolver(api))
    schema = make_executable_schema(schema_sdl(spec), query)

    async def healthz(_request: Any) -> JSONResponse:
        return JSONResponse({"status": "ok", "domain": spec.domain})

    return Starlette(routes=[Route("/healthz", healthz), Route("/graphql", GraphQL(schema, debug=False), methods=["GET", "POST"])])


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    from soay.domains import get_domain

    parser = argparse.ArgumentParser(description="Serve a domain's APIs as GraphQL.")
    parser.add_argument("--domain", default="movies")
    parser.add_argument("--db", required=True, help="the domain's corpus (SQLite)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8310)
    args = parser.parse_args(argv)
    domain = get_domain(args.domain)
    app = create_graphql_app(domain.spec, lambda: domain.open_environment(args.db))
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
