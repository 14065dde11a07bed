"""Reading an API document from a file or a URL, and telling which kind it is.

Size is checked before parsing (a YAML parser holds the whole tree in memory, and a huge
document is far more likely a mistake than an API), and the kind is read from the content,
not trusted from the file name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from graphql import get_introspection_query

from soay.importers.errors import SpecImportError

MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
"""Larger than any real API description we know (Kubernetes' OpenAPI document is ~6 MB)."""
SDL_SUFFIXES = {".graphql", ".gql", ".graphqls", ".sdl"}
INTROSPECTION_QUERY = get_introspection_query(descriptions=True)
"""What a GraphQL endpoint is asked for its schema when its URL serves no document."""
INTROSPECTION_QUERY_TIMEOUT_S = 30.0


@dataclass
class Document:
    kind: Literal["openapi", "graphql-sdl", "graphql-introspection"]
    origin: str
    """The path or URL it came from (relative `$ref`s resolve against it)."""
    content: Any
    """A dict (OpenAPI, introspection result) or SDL text."""
    base_uri: str = ""


def read_document(location: str | Path) -> Document:
    """The document at a path or an http(s) URL, with its kind; SpecImportError if it is neither."""
    text = str(location)
    if text.startswith(("http://", "https://")):
        return _read_url(text)
    path = Path(location)
    if not path.is_file():
        raise SpecImportError(f"no such file: {path}")
    size = path.stat().st_size
    if size > MAX_DOCUMENT_BYTES:
        raise SpecImportError(
            f"{path} is {size / 2**20:.1f} MiB; API documents are limited to {MAX_DOCUMENT_BYTES // 2**20} MiB"
        )
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise SpecImportError(f"{path} is not UTF-8 text") from None
    if path.suffix.lower() in SDL_SUFFIXES:
        return Document("graphql-sdl", str(path), raw, path.resolve().as_uri())
    return classify(raw, str(path), path.resolve().as_uri(), json_only=path.suffix.lower() == ".json")


def classify(raw: str, origin: str, base_uri: str = "", json_only: bool = False, allow_sdl: bool = True) -> Document:
    """Tell an OpenAPI document, a GraphQL introspection result and GraphQL SDL apart by content."""
    data: Any = None
    try:
        data = json.loads(raw) if json_only else yaml.safe_load(raw)
    except (ValueError, yaml.YAMLError) as e:
        if json_only:
            raise SpecImportError(f"{origin} is not valid JSON: {e}") from None
        data = None
    if isinstance(data, dict):
        if "openapi" in data:
            return Document("openapi", origin, _string_keys(data), base_uri)
        if "swagger" in data:
            if not str(data["swagger"]).startswith("2"):
                raise SpecImportError(f"{origin} is Swagger {data['swagger']}; Swagger 2.0 and OpenAPI 3.0/3.1 are supported")
            return Document("openapi", origin, _string_keys(data), base_uri)  # read in 3.0 shape (soay/importers/swagger.py)
        schema = data.get("data", data) if isinstance(data.get("data", data), dict) else {}
        if "__schema" in schema:
            return Document("graphql-introspection", origin, schema, base_uri)
        raise SpecImportError(f"{origin} is not an OpenAPI 3 document (no `openapi` field), nor Swagger 2.0, nor a GraphQL schema")
    if allow_sdl and _looks_like_sdl(raw):
        return Document("graphql-sdl", origin, raw, base_uri)
    raise SpecImportError(f"{origin} is not an OpenAPI 3 document (JSON or YAML) nor a GraphQL schema (SDL)")


def _looks_like_sdl(raw: str) -> bool:
    words = {w.strip("{") for w in raw.split()[:2000]}
    return bool(words & {"type", "schema", "interface", "enum", "input", "union", "scalar"}) and "{" in raw


def _string_keys(value: Any) -> Any:
    """YAML reads `200:` as an int; OpenAPI keys are strings (the validator needs them so)."""
    if isinstance(value, dict):
        return {str(k): _string_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_string_keys(v) for v in value]
    return value


def _read_url(url: str) -> Document:
    """An OpenAPI document served at `url`, or a GraphQL endpoint asked for its schema."""
    import httpx

    try:
        with httpx.Client(timeout=INTROSPECTION_QUERY_TIMEOUT_S, follow_redirects=True) as client:
            response = client.get(url, headers={"accept": "application/json, application/yaml, */*"})
            media = response.headers.get("content-type", "")
            if response.status_code == 200 and len(response.content) <= MAX_DOCUMENT_BYTES and "html" not in media:
                try:
                    return classify(response.text, url, url, allow_sdl="graphql" in media or "text/plain" in media)
                except SpecImportError:
                    pass
            response = client.post(url, json={"query": INTROSPECTION_QUERY})
    except httpx.HTTPError as e:
        raise SpecImportError(f"could not read {url}: {e}") from None
    if len(response.content) > MAX_DOCUMENT_BYTES:
        raise SpecImportError(f"{url} answered more than {MAX_DOCUMENT_BYTES // 2**20} MiB")
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code != 200 or not isinstance(body, dict) or "__schema" not in (body.get("data") or {}):
        raise SpecImportError(
            f"{url} served neither an OpenAPI document nor a GraphQL introspection result (HTTP {response.status_code})"
        )
    return Document("graphql-introspection", url, body["data"], url)
