"""OpenAPI 3.0 / 3.1 documents as operation drafts.

Parsing and `$ref` resolution are the well-kept libraries' job: openapi-spec-validator checks the
document against the OpenAPI schema, jsonschema-path walks it and follows `$ref`s (local and to
other files). What this module adds is the reading: which operation is a read, what it takes
(path, query and JSON body parameters) and what it returns (the 2xx JSON response schema),
keeping the name of every `$ref`'d schema, since schema identity is what tells the entities apart.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterator
from typing import Any

from jsonschema_path import SchemaPath
from openapi_spec_validator import OpenAPIV30SpecValidator, OpenAPIV31SpecValidator
from referencing.exceptions import Unresolvable

from soay.importers.drafts import DocumentDraft, FieldDraft, OperationDraft, ParamDraft, ScalarKind
from soay.importers.errors import Problem, SpecImportError
from soay.importers.source import Document

READ_METHODS = ("get", "post")
WRITE_METHODS = ("put", "patch", "delete")
_SCALARS: dict[str, ScalarKind] = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
MAX_DEPTH = 2
"""Records nest one level (a publication's authors), as the spec does."""


def read_openapi(doc: Document) -> DocumentDraft:
    """Every read operation of the document as a draft; the others as problems."""
    content: dict[str, Any] = doc.content
    version = str(content.get("openapi", ""))
    if not version.startswith(("3.0", "3.1")):
        raise SpecImportError(f"{doc.origin}: OpenAPI {version or '(no version)'} is not supported (3.0 and 3.1 are)")
    if not isinstance(content.get("paths"), dict) or not content["paths"]:
        raise SpecImportError(f"{doc.origin}: the OpenAPI document has no paths, so no operations to import")
    root = SchemaPath.from_dict(content, base_uri=doc.base_uri)
    _check_refs(content, root, doc.origin)
    problems = _validate(content, doc)
    broken = {p.operation for p in problems}
    info = content.get("info") or {}
    draft = DocumentDraft(
        protocol="openapi",
        title=str(info.get("title") or ""),
        description=str(info.get("description") or info.get("title") or ""),
        operations=[],
        problems=problems,
        transport={"servers": [s.get("url") for s in content.get("servers") or [] if isinstance(s, dict)]},
    )
    names: set[str] = set()
    for path, method, op in _operations(root):
        label = f"{method.upper()} {path}"
        if label in broken:
            continue
        name = _unique(_operation_name(_val(op, "operationId", None), method, path), names)
        where = f"{name} ({label})"
        if method in WRITE_METHODS:
            draft.problems.append(Problem(where, f"{method.upper()} changes data; only reads (GET, POST) become APIs"))
            continue
        try:
            operation = _operation(root, path, method, op, name)
        except _Unsupported as e:
            draft.problems.append(Problem(where, str(e)))
            continue
        except Unresolvable as e:
            raise SpecImportError(f"{doc.origin}: {where}: broken $ref ({e})") from None
        if operation.params:
            draft.operations.append(operation)
        elif operation.returns == "records":
            draft.listers.append(operation)
            draft.problems.append(Problem(where, "takes no input, so it is no API of the spec; kept to sample head entities"))
        else:
            draft.problems.append(Problem(where, "takes no input and returns no list: nothing a question could start from"))
    return draft


class _Unsupported(Exception):
    """This operation uses something the spec cannot express; the message says what."""


def _check_refs(content: Any, root: SchemaPath, origin: str) -> None:
    """Fail on the first `$ref` that points nowhere, naming where it is."""
    for location, ref in _refs(content, ()):
        node = root.joinpath(*location) if location else root
        try:
            with node.resolve():
                pass
        except Unresolvable as e:
            where = "/".join(map(str, location)) or "/"
            raise SpecImportError(f"{origin}: broken $ref {ref!r} at {where} ({type(e).__name__})") from None
        except Exception as e:  # noqa: BLE001 - a retrieval failure (missing file) reads the same to a person
            raise SpecImportError(f"{origin}: $ref {ref!r} at {'/'.join(map(str, location))} cannot be read ({e})") from None


def _refs(value: Any, location: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str):
            yield location, ref
            return
        for key, item in value.items():
            if key in ("example", "examples"):
                continue  # examples are data, and their $refs are not followed by readers
            yield from _refs(item, location + (str(key),))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _refs(item, location + (i,))


def _validate(content: dict[str, Any], doc: Document) -> list[Problem]:
    """Schema violations, each pinned to its operation (which is then skipped).

    A violation outside any operation (info, components) is reported but does not stop the
    import: what matters for the spec is the operations.
    """
    validator_cls = OpenAPIV31SpecValidator if str(content["openapi"]).startswith("3.1") else OpenAPIV30SpecValidator
    problems: list[Problem] = []
    try:
        errors = list(validator_cls(content, base_uri=doc.base_uri).iter_errors())
    except Exception as e:  # noqa: BLE001 - the validator itself failing must not stop an import
        return [Problem("(document)", f"the OpenAPI validator could not check it ({type(e).__name__}: {e})")]
    seen: set[str] = set()
    for error in errors:
        parts = [str(p) for p in getattr(error, "absolute_path", [])]
        message = str(getattr(error, "message", error)).splitlines()[0]
        if len(parts) >= 3 and parts[0] == "paths" and parts[2] in READ_METHODS + WRITE_METHODS:
            label = f"{parts[2].upper()} {parts[1]}"
        else:
            label = "(document)" if not parts else "/".join(parts[:3])
        if (label, message) in seen:
            continue
        seen.add((label, message))  # type: ignore[arg-type]
        problems.append(Problem(label, f"invalid OpenAPI: {message}"))
    return problems


def _operations(root: SchemaPath) -> Iterator[tuple[str, str, SchemaPath]]:
    paths = root / "paths"
    for path in paths.keys():
        item = paths / path
        for method in READ_METHODS + WRITE_METHODS:
            if method in item.keys():
                yield str(path), method, item / method


def _operation_name(operation_id: Any, method: str, path: str) -> str:
    """The operationId made a Python identifier, or one built from the method and path."""
    if isinstance(operation_id, str) and operation_id.strip():
        name = re.sub(r"\W+", "_", operation_id.strip()).strip("_")
    else:
        words = [w for w in re.split(r"[/{}\-_.]+", path) if w]
        name = method + "".join(w[:1].upper() + w[1:] for w in words)
    if not name or name[0].isdigit() or keyword.iskeyword(name):
        name = f"op_{name}"
    return name


def _unique(name: str, taken: set[str]) -> str:
    candidate, k = name, 2
    while candidate in taken:
        candidate, k = f"{name}{k}", k + 1
    taken.add(candidate)
    return candidate


def _val(node: SchemaPath, key: str, default: Any) -> Any:
    """The plain value under `key` (SchemaPath.get returns a path, not the value)."""
    return (node / key).read_value() if key in node.keys() else default


def _text(node: SchemaPath, *keys: str) -> str:
    for key in keys:
        if key in node.keys():
            value = (node / key).read_value()
            if isinstance(value, str) and value.strip():
                return " ".join(value.split())
    return ""


def _operation(root: SchemaPath, path: str, method: str, op: SchemaPath, name: str) -> OperationDraft:
    notes: list[str] = []
    params = _parameters(root / "paths" / path, op, notes)
    params += _body(op, notes, taken={p.name for p in params})
    returns, fields, shape, values_name = _response(op, notes)
    return OperationDraft(
        name=name,
        description=_text(op, "description", "summary"),
        params=params,
        returns=returns,
        fields=fields,
        shape=shape,
        values_name=values_name,
        binding={"method": method.upper(), "path": path, "params": {p.name: p.location for p in params}},
        notes=notes,
    )


def _parameters(item: SchemaPath, op: SchemaPath, notes: list[str]) -> list[ParamDraft]:
    declared: dict[tuple[str, str], SchemaPath] = {}
    for owner in (item, op):  # operation-level parameters override path-level ones
        if "parameters" in owner.keys():
            for p in owner / "parameters":
                declared[(str(_val(p, "name", "")), str(_val(p, "in", "")))] = p
    params: list[ParamDraft] = []
    for (pname, location), p in declared.items():
        required = bool(_val(p, "required", False)) or location == "path"
        try:
            if location not in ("path", "query"):
                raise _Unsupported(f"{location} parameter {pname!r} (only path, query and JSON body inputs are supported)")
            _check_identifier(pname)
            if "schema" not in p.keys():
                raise _Unsupported(f"parameter {pname!r} has no schema")
            typ = _scalar(p / "schema", f"parameter {pname!r}")
        except _Unsupported as e:
            if required:
                raise
            notes.append(f"optional input left out: {e}")
            continue
        params.append(ParamDraft(pname, typ, required, _text(p, "description"), location))
    return params


def _body(op: SchemaPath, notes: list[str], taken: set[str]) -> list[ParamDraft]:
    if "requestBody" not in op.keys():
        return []
    body = op / "requestBody"
    required_body = bool(_val(body, "required", False))
    media = _json_media(body)
    if media is None:
        if required_body:
            raise _Unsupported("the request body is not JSON")
        notes.append("optional non-JSON request body left out")
        return []
    schema = _unwrap(media / "schema")
    props = _properties(schema)
    if props is None:
        raise _Unsupported("the JSON request body is not an object with properties")
    required = set(_val(schema, "required", None) or [])
    params: list[ParamDraft] = []
    for pname, prop in props:
        try:
            _check_identifier(pname)
            if pname in taken:
                raise _Unsupported(f"body property {pname!r} has the name of a path or query parameter")
            typ = _scalar(prop, f"body property {pname!r}")
        except _Unsupported as e:
            if pname in required and required_body:
                raise
            notes.append(f"optional input left out: {e}")
            continue
        params.append(ParamDraft(pname, typ, pname in required and required_body, _text(prop, "description"), "body"))
    return params


def _check_identifier(name: str) -> None:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise _Unsupported(f"{name!r} is not a Python identifier, so generated code could not pass it by name")


def _json_media(node: SchemaPath) -> SchemaPath | None:
    if "content" not in node.keys():
        return None
    content = node / "content"
    for media_type in content.keys():
        mt = str(media_type).split(";")[0].strip().lower()
        if (mt == "application/json" or mt.endswith("+json")) and "schema" in (content / media_type).keys():
            return content / media_type
    return None


def _response(op: SchemaPath, notes: list[str]) -> tuple[str, list[FieldDraft], str | None, str | None]:
    if "responses" not in op.keys():
        raise _Unsupported("no responses declared")
    responses = op / "responses"
    codes = sorted((str(c) for c in responses.keys() if str(c).startswith("2")), key=lambda c: (c != "200", c))
    media = next((m for c in codes if (m := _json_media(responses / c)) is not None), None)
    if media is None:
        raise _Unsupported("no JSON response schema for a 2xx answer, so what it returns is unknown")
    schema = _unwrap(media / "schema")
    shape = _ref_name(media, "schema")
    kind = _type(schema)
    if kind == "array":
        items_ref = _ref_name(schema, "items")
        items = _unwrap(schema / "items") if "items" in schema.keys() else None
        if items is None:
            raise _Unsupported("the response is an array with no `items` schema")
        item_kind = _type(items)
        if item_kind == "object":
            return "records", _fields(items, notes, depth=1), items_ref, None
        if item_kind in _SCALARS:
            title = _val(schema, "title", None)
            return "values", [], None, title if isinstance(title, str) else None
        raise _Unsupported(f"the response is an array of {item_kind or 'mixed'} items")
    if kind == "object":
        return "record", _fields(schema, notes, depth=1), shape, None
    raise _Unsupported(f"the response is a single {kind or 'untyped'} value, not a record or a list")


def _ref_name(parent: SchemaPath, key: str) -> str | None:
    """The component name a `$ref` under `parent[key]` points to (schema identity), if any."""
    raw = parent.read_value() if hasattr(parent, "read_value") else None
    value = raw.get(key) if isinstance(raw, dict) else None
    ref = value.get("$ref") if isinstance(value, dict) else None
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def _unwrap(schema: SchemaPath) -> SchemaPath:
    """`anyOf: [X, {type: null}]` (how FastAPI and 3.1 write optional) read as X."""
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema.keys():
            options = [o for o in schema / combinator if _type(o) != "null"]
            if len(options) == 1:
                return _unwrap(options[0])
            raise _Unsupported(f"a {combinator} of {len(options)} schemas (polymorphic values are not supported)")
    return schema


def _type(schema: SchemaPath) -> str | None:
    value = _val(schema, "type", None)
    if isinstance(value, list):  # 3.1: type: [string, "null"]
        kinds = [v for v in value if v != "null"]
        value = kinds[0] if len(kinds) == 1 else None
    if value is None and ("properties" in schema.keys() or "allOf" in schema.keys()):
        return "object"
    if value is None and "items" in schema.keys():
        return "array"
    return value if isinstance(value, str) else None


def _properties(schema: SchemaPath) -> list[tuple[str, SchemaPath]] | None:
    """Properties of an object schema, `allOf` parts merged in order."""
    if _type(schema) != "object":
        return None
    props: dict[str, SchemaPath] = {}
    if "allOf" in schema.keys():
        for part in schema / "allOf":
            for name, prop in _properties(_unwrap(part)) or []:
                props[name] = prop
    if "properties" in schema.keys():
        for name in (schema / "properties").keys():
            props[str(name)] = schema / "properties" / name
    return list(props.items())


def _scalar(schema: SchemaPath, what: str) -> ScalarKind:
    schema = _unwrap(schema)
    kind = _type(schema)
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array" and "items" in schema.keys() and _type(_unwrap(schema / "items")) == "string":
        return "list[str]"
    if kind is None and "enum" in schema.keys():
        return "str"
    raise _Unsupported(f"{what} is of type {kind or 'unknown'} (strings, numbers, booleans and lists of strings are supported)")


def _fields(schema: SchemaPath, notes: list[str], depth: int) -> list[FieldDraft]:
    out: list[FieldDraft] = []
    for name, prop in _properties(schema) or []:
        where = f"attribute {name!r}"
        try:
            prop_schema = _unwrap(prop)
            kind = _type(prop_schema)
            if kind == "array" and "items" in prop_schema.keys() and _type(_unwrap(prop_schema / "items")) == "object":
                if depth >= MAX_DEPTH:
                    raise _Unsupported(f"{where}: records nested more than one level")
                items = _unwrap(prop_schema / "items")
                out.append(
                    FieldDraft(name, "records", _text(prop, "description") or _text(prop_schema, "description"),
                               _fields(items, notes, depth + 1), _ref_name(prop_schema, "items"))
                )
                continue
            if kind == "object":
                raise _Unsupported(f"{where} is a nested object (only lists of records nest)")
            typ = _scalar(prop_schema, where)
        except _Unsupported as e:
            notes.append(f"left out: {e}")
            continue
        out.append(FieldDraft(name, typ, _text(prop, "description") or _text(prop_schema, "description")))
    return out
