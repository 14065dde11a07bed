"""OpenAPI 3.0 / 3.1 and Swagger 2.0 documents as operation drafts.

Parsing and `$ref` resolution are the well-kept libraries' job: openapi-spec-validator checks the
document against the OpenAPI schema, jsonschema-path walks it and follows `$ref`s (local and to
other files). Swagger 2.0 is first rewritten into 3.0 shape (soay/importers/swagger.py). What this
module adds is the reading: which operation is a read, what it takes (path, query and JSON body
parameters) and what it returns (the 2xx JSON response schema, a paged envelope unwrapped to its
records), keeping the name of every `$ref`'d schema, since schema identity is what tells the
entities apart.

Documents in the wild are rarely valid to the letter: a schema keyword the validator does not
know (`cache`), a `null` default. The validator's findings are therefore warnings that name the
operation and the defect; an operation is left out only when it cannot be read at all, and then
it is listed with the reason.
"""

from __future__ import annotations

import keyword
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from jsonschema_path import SchemaPath
from openapi_spec_validator import OpenAPIV2SpecValidator, OpenAPIV30SpecValidator, OpenAPIV31SpecValidator
from referencing.exceptions import Unresolvable

from soay.importers.drafts import DocumentDraft, FieldDraft, OperationDraft, ParamDraft, ScalarKind, nested_binding
from soay.importers.errors import Problem, SpecImportError
from soay.importers.nesting import lift_references
from soay.importers.security import operation_auth, read_schemes, secret_params
from soay.importers.source import Document
from soay.importers.swagger import is_swagger2, to_openapi3
from soay.importers.words import snake, words

READ_METHODS = ("get", "post")
WRITE_METHODS = ("put", "patch", "delete")
_SCALARS: dict[str, ScalarKind] = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
MAX_DEPTH = 2
"""Records nest one level (a publication's authors), as the spec does."""
MAX_READ_DEPTH = 4
"""How deep objects are read to find the references in them; those below MAX_DEPTH are lifted
to the top of their record (soay/importers/nesting.py), the rest left out."""
MAX_WARNINGS_PER_MESSAGE = 3
"""A defect repeated over hundreds of schemas is named a few times, then counted."""


def read_openapi(doc: Document) -> DocumentDraft:
    """Every read operation of the document as a draft; the others as problems, each with its reason."""
    original: dict[str, Any] = doc.content
    swagger = is_swagger2(original)
    content = to_openapi3(original) if swagger else original
    version = str(original.get("swagger" if swagger else "openapi", ""))
    kind = f"Swagger {version}" if swagger else f"OpenAPI {version}"
    if not swagger and not version.startswith(("3.0", "3.1")):
        raise SpecImportError(f"{doc.origin}: OpenAPI {version or '(no version)'} is not supported (3.0, 3.1 and Swagger 2.0 are)")
    if not isinstance(content.get("paths"), dict) or not content["paths"]:
        raise SpecImportError(f"{doc.origin}: the {kind} document has no paths, so no operations to import")
    root = SchemaPath.from_dict(content, base_uri=doc.base_uri)
    broken, ref_warnings = _broken_refs(content, root)
    schemes, scheme_notes = read_schemes(content)
    info = content.get("info") or {}
    draft = DocumentDraft(
        protocol="openapi",
        title=str(info.get("title") or ""),
        description=" ".join(str(info.get("description") or info.get("title") or "").split())[:2000],
        operations=[],
        problems=[],
        transport={"servers": [s.get("url") for s in content.get("servers") or [] if isinstance(s, dict)], "auth": schemes},
        warnings=_validate(original, doc, swagger) + ref_warnings + [Problem("(security)", n) for n in scheme_notes],
    )
    rpc = not any("get" in (item or {}) for item in content["paths"].values() if isinstance(item, dict))
    reader = _Reader(root, secret_params(schemes), schemes)
    names: set[str] = set()
    for path, method, op in _operations(root):
        draft.operation_count += 1
        label = f"{method.upper()} {path}"
        name = _unique(_operation_name(_val(op, "operationId", None), method, path, names), names)
        where = f"{name} ({label})"
        reason = broken.get(label) or broken.get(path) or _not_a_read(method, name, path, rpc)
        if reason:
            draft.problems.append(Problem(where, reason))
            continue
        try:
            draft.operations.append(reader.operation(path, method, op, name))
        except _Unsupported as e:
            draft.problems.append(Problem(where, str(e)))
        except Unresolvable as e:
            draft.problems.append(Problem(where, f"broken $ref ({e})"))
        except Exception as e:  # noqa: BLE001 - a malformed schema must cost this operation, never the import
            draft.problems.append(Problem(where, f"cannot be read ({type(e).__name__}: {e})"))
    return draft


class _Unsupported(Exception):
    """This operation uses something the spec cannot express; the message says what."""


def _not_a_read(method: str, name: str, path: str, rpc: bool) -> str | None:
    """Why an operation is no read, or None. A POST reads when the API is RPC-style (no GET at
    all) or its name says it reads (`searchDocuments`, `/api/getCoauthors`)."""
    if method in WRITE_METHODS:
        return f"{method.upper()} changes data; only reads become APIs"
    if method == "post" and not rpc:
        last = snake(path.rstrip("/").rsplit("/", 1)[-1])
        if not any(snake(name).startswith(v) or last.startswith(v) for v in words().read_verbs):
            return "POST that creates or changes data (its name says no read); only reads become APIs"
    return None


# ----------------------------------------------------------------------------- the document


def _broken_refs(content: Any, root: SchemaPath) -> tuple[dict[str, str], list[Problem]]:
    """`$ref`s that point nowhere: those under an operation cost that operation (keyed by
    `METHOD path`, or by path for a path item's), the others are warnings."""
    broken: dict[str, str] = {}
    warnings: list[Problem] = []
    for location, ref in _refs(content, ()):
        node = root.joinpath(*location) if location else root
        try:
            with node.resolve():
                pass
        except Unresolvable as e:
            reason = f"broken $ref {ref!r} at {_where(location)} ({type(e).__name__})"
        except Exception as e:  # noqa: BLE001 - a retrieval failure (missing file) reads the same to a person
            reason = f"$ref {ref!r} at {_where(location)} cannot be read ({e})"
        else:
            continue
        key = _operation_key(location)
        if key is None:
            warnings.append(Problem("(document)", reason))
        else:
            broken.setdefault(key, reason)
    return broken, warnings


def _where(location: tuple[str | int, ...]) -> str:
    return "/".join(map(str, location)) or "/"


def _operation_key(location: tuple[str | int, ...]) -> str | None:
    if len(location) >= 2 and location[0] == "paths":
        if len(location) >= 3 and location[2] in READ_METHODS + WRITE_METHODS:
            return f"{str(location[2]).upper()} {location[1]}"
        return str(location[1])
    return None


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


def _validate(content: dict[str, Any], doc: Document, swagger: bool) -> list[Problem]:
    """The validator's findings as warnings, each pinned to its operation where it has one.

    A finding does not stop the operation: what the importer cannot read it reports itself,
    with a reason; what it can read despite the defect it reads. The same defect repeated over
    many places is named a few times and then counted.
    """
    if swagger:
        validator_cls: type = OpenAPIV2SpecValidator
    else:
        validator_cls = OpenAPIV31SpecValidator if str(content["openapi"]).startswith("3.1") else OpenAPIV30SpecValidator
    causes = _Causes(content, swagger)
    warnings: list[Problem] = []
    try:
        errors = list(validator_cls(content, base_uri=doc.base_uri).iter_errors())
    except Exception as e:  # noqa: BLE001 - the validator itself failing must not stop an import
        warnings.append(Problem("(document)", _short(f"the OpenAPI validator stopped ({type(e).__name__}: {e}); "
                                                      "the document was checked against the OpenAPI schema alone")))
        errors = causes.plain()
    seen: set[tuple[str, str]] = set()
    per_message: Counter[str] = Counter()
    for error in errors:
        error = causes.of(error)
        parts = [str(p) for p in getattr(error, "absolute_path", [])]
        message = _short(str(getattr(error, "message", error)).splitlines()[0])
        label = _error_label(parts)
        if (label, message) in seen:
            continue
        seen.add((label, message))
        per_message[message] += 1
        if per_message[message] <= MAX_WARNINGS_PER_MESSAGE:
            at = "/".join(parts[3:]) if label.startswith(tuple(m.upper() for m in READ_METHODS + WRITE_METHODS)) else "/".join(parts)
            warnings.append(Problem(label, f"schema defect read past: {message}" + (f" (at {at})" if at else "")))
    for message, count in per_message.items():
        if count > MAX_WARNINGS_PER_MESSAGE:
            warnings.append(Problem("(document)", f"schema defect read past in {count - MAX_WARNINGS_PER_MESSAGE} more places: {message}"))
    return warnings


class _Causes:
    """What a "not valid under any of the given schemas" finding is about.

    openapi-spec-validator reports a defective schema object as its whole response failing a
    `oneOf`, without the sub-errors; the plain JSON-schema check of the document against the
    same OpenAPI meta-schema keeps them, and its deepest one names the defect ("'cache' does not
    match any of the regexes: '^x-'"). Run once, and only when such a finding comes up.
    """

    def __init__(self, content: dict[str, Any], swagger: bool) -> None:
        self.content = content
        self.swagger = swagger
        self._leaves: list[Any] | None = None
        self._deepest: list[Any] = []

    def of(self, error: Any) -> Any:
        message = str(getattr(error, "message", ""))
        if "is not valid under any of the" not in message:
            return error
        at = tuple(map(str, getattr(error, "absolute_path", ())))
        under = [leaf for leaf in self.leaves() if tuple(map(str, leaf.absolute_path))[: len(at)] == at]
        if not under:
            return error
        return max(under, key=lambda leaf: (len(leaf.absolute_path), leaf.validator != "required"))

    def plain(self) -> list[Any]:
        """The document's defects by the meta-schema alone, each by its deepest cause (for when
        the OpenAPI validator cannot run, e.g. on a broken `$ref`)."""
        self.leaves()
        return list(self._deepest)

    def leaves(self) -> list[Any]:
        if self._leaves is None:
            self._leaves, self._deepest = [], []
            try:
                for error in self._validator().iter_errors(self.content):
                    found = _leaves(error)
                    self._leaves.extend(found)
                    self._deepest.append(max(found, key=lambda leaf: (len(leaf.absolute_path), leaf.validator != "required")))
            except Exception:  # noqa: BLE001 - a better message is a nicety; the finding stands without it
                pass
        return self._leaves

    def _validator(self) -> Any:
        from jsonschema import Draft4Validator, Draft202012Validator
        from openapi_spec_validator.schemas import schema_v2, schema_v30, schema_v31

        if self.swagger:
            return Draft4Validator(schema_v2)
        if str(self.content.get("openapi", "")).startswith("3.1"):
            return Draft202012Validator(schema_v31)
        return Draft4Validator(schema_v30)


def _leaves(error: Any) -> list[Any]:
    if not getattr(error, "context", None):
        return [error]
    return [leaf for sub in error.context for leaf in _leaves(sub)]


def _short(message: str, limit: int = 200) -> str:
    """A message whose instance repr runs long keeps its head and its reason."""
    if len(message) <= limit:
        return message
    return message[: limit // 2] + " ... " + message[-limit // 2 :]


def _error_label(parts: list[str]) -> str:
    if len(parts) >= 3 and parts[0] == "paths" and parts[2] in READ_METHODS + WRITE_METHODS:
        return f"{parts[2].upper()} {parts[1]}"
    return "(document)" if not parts else "/".join(parts[:3])


def _operations(root: SchemaPath) -> Iterator[tuple[str, str, SchemaPath]]:
    paths = root / "paths"
    for path in paths.keys():
        item = paths / path
        if not isinstance(item.read_value(), dict):
            continue
        for method in READ_METHODS + WRITE_METHODS:
            if method in item.keys():
                yield str(path), method, item / method


def _operation_name(operation_id: Any, method: str, path: str, taken: set[str]) -> str:
    """The operationId made a Python identifier, or one built from the method and the path's
    literal segments (`GET /movie/{movie_id}/credits` -> getMovieCredits)."""
    if isinstance(operation_id, str) and operation_id.strip():
        name = re.sub(r"\W+", "_", operation_id.strip()).strip("_")
    else:
        literals = [w for w in path.split("/") if w and not w.startswith("{")]
        words_ = [w for part in literals for w in re.split(r"[\-_.]+", part) if w]
        name = method + "".join(w[:1].upper() + w[1:] for w in words_)
        params = re.findall(r"\{([^}]+)\}", path)
        if name in taken and params:
            name += "By" + "".join(w[:1].upper() + w[1:] for w in re.split(r"[\-_.]+", params[-1]) if w)
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


def identifier(name: str) -> str:
    """A parameter name generated code can pass by keyword: `with-genres` -> with_genres,
    `filter[name]` -> filter_name, `from` -> from_."""
    s = re.sub(r"\W+", "_", name).strip("_")
    if not s:
        raise _Unsupported(f"{name!r} has no letters to name a Python argument by")
    if s[0].isdigit():
        s = f"p_{s}"
    return f"{s}_" if keyword.iskeyword(s) else s


# ----------------------------------------------------------------------------- one operation


@dataclass
class _Returned:
    returns: str
    fields: list[FieldDraft]
    shape: str | None
    values_name: str | None = None
    unwrap: str | None = None
    """The envelope property the records are read from (`results`), when the answer is a page."""


class _Reader:
    """Reads operations of one document; knows which parameters its security schemes fill."""

    def __init__(self, root: SchemaPath, secrets: set[tuple[str, str]], schemes: list[dict[str, Any]]) -> None:
        self.root = root
        self.secrets = secrets
        self.schemes = schemes

    def operation(self, path: str, method: str, op: SchemaPath, name: str) -> OperationDraft:
        notes: list[str] = []
        headers: dict[str, str] = {}
        params = self._parameters(self.root / "paths" / path, op, notes, headers)
        params += _body(op, notes, taken={p.name for p in params})
        returned = _response(op, notes)
        returned.fields = lift_references(returned.fields, notes)
        binding: dict[str, Any] = {"method": method.upper(), "path": path, "params": {p.name: p.location for p in params}}
        names = {p.name: p.doc_name for p in params if p.doc_name and p.doc_name != p.name}
        if names:
            binding["names"] = names
        if returned.unwrap:
            binding["unwrap"] = returned.unwrap
        if nested := nested_binding(returned.fields):
            binding["nested"] = nested
        if headers:
            binding["headers"] = headers
        auth = operation_auth(_val(op, "security", None), self.schemes)
        if auth is not None:
            binding["auth"] = auth
        return OperationDraft(
            name=name,
            description=_text(op, "description", "summary"),
            params=params,
            returns=returned.returns,  # type: ignore[arg-type]
            fields=returned.fields,
            shape=returned.shape,
            values_name=returned.values_name,
            binding=binding,
            notes=notes,
            path=path,
        )

    def _parameters(self, item: SchemaPath, op: SchemaPath, notes: list[str], headers: dict[str, str]) -> list[ParamDraft]:
        declared: dict[tuple[str, str], SchemaPath] = {}
        for owner in (item, op):  # operation-level parameters override path-level ones
            if "parameters" in owner.keys():
                for p in owner / "parameters":
                    declared[(str(_val(p, "name", "")), str(_val(p, "in", "")))] = p
        params: list[ParamDraft] = []
        taken: set[str] = set()
        for (pname, location), p in declared.items():
            required = bool(_val(p, "required", False)) or location == "path"
            if (location, pname.lower()) in self.secrets:
                notes.append(f"{location} parameter {pname!r} is the API key: sent from the key at call time, not an input")
                continue
            try:
                if location in ("header", "cookie"):
                    fixed = _fixed_value(p) if required else None
                    if fixed is not None and location == "header":
                        headers[pname] = fixed
                        notes.append(f"required header {pname!r} sent as {fixed!r} (its only or default value)")
                        continue
                    raise _Unsupported(f"{location} parameter {pname!r} (only path, query and JSON body inputs are supported)")
                if location not in ("path", "query"):
                    raise _Unsupported(f"{location} parameter {pname!r} (only path, query and JSON body inputs are supported)")
                name = identifier(pname)
                if name in taken:
                    raise _Unsupported(f"parameter {pname!r} reads as {name!r}, the name of another parameter")
                if "schema" not in p.keys():
                    raise _Unsupported(f"parameter {pname!r} has no schema")
                typ = _scalar(p / "schema", f"parameter {pname!r}")
                enum = _enum(p / "schema")
            except _Unsupported as e:
                if required:
                    raise
                notes.append(f"optional input left out: {e}")
                continue
            taken.add(name)
            if name != pname:
                notes.append(f"parameter {pname!r} is called {name!r} (a Python name); the binding sends it as {pname!r}")
            params.append(ParamDraft(name, typ, required, _text(p, "description"), location, enum,
                                     pname if name != pname else "", _param_example(p)))
        return params


def _param_example(p: SchemaPath) -> str:
    """A parameter's example (`example`, Swagger's `x-example`, its schema's, or the first of its
    `examples`), as text; empty when it has none."""
    for node in (p, p / "schema" if "schema" in p.keys() else None):
        if node is None:
            continue
        for key in ("example", "x-example"):
            text = _example_text(_val(node, key, None))
            if text:
                return text
    examples = _val(p, "examples", None)
    if isinstance(examples, dict):
        for item in examples.values():
            text = _example_text(item.get("value") if isinstance(item, dict) else None)
            if text:
                return text
    return ""


def _example_text(value: Any) -> str:
    """A scalar example as text (the first of a list); nothing for objects and booleans."""
    if isinstance(value, list) and value:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return ""
    return str(value)


def _media_example(media: SchemaPath) -> Any:
    """The example answer a media type gives (`example`, or the first of its `examples`)."""
    example = _val(media, "example", None)
    if example is not None:
        return example
    examples = _val(media, "examples", None)
    if isinstance(examples, dict):
        for item in examples.values():
            if isinstance(item, dict) and "value" in item:
                return item["value"]
    return None


def _first_record(example: Any) -> dict[str, Any] | None:
    """The record an example shows: itself, or the first record of a list of them."""
    if isinstance(example, list):
        example = next((e for e in example if isinstance(e, dict)), None)
    return example if isinstance(example, dict) else None


def _fixed_value(p: SchemaPath) -> str | None:
    """The value a required header can only take: its default or its one enum value."""
    schema = p / "schema" if "schema" in p.keys() else p
    default = _val(schema, "default", None)
    enum = _val(schema, "enum", None)
    if default is not None:
        return str(default)
    if isinstance(enum, list) and len(enum) == 1:
        return str(enum[0])
    return None


def _enum(schema: SchemaPath) -> tuple[str, ...]:
    schema = _unwrap(schema)
    if _type(schema) == "array" and "items" in schema.keys():
        schema = _unwrap(schema / "items")
    values = _val(schema, "enum", None)
    return tuple(str(v) for v in values if v not in (None, "")) if isinstance(values, list) else ()


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
            name = identifier(pname)
            if name in taken:
                raise _Unsupported(f"body property {pname!r} has the name of a path or query parameter")
            typ = _scalar(prop, f"body property {pname!r}")
        except _Unsupported as e:
            if pname in required and required_body:
                raise
            notes.append(f"optional input left out: {e}")
            continue
        taken.add(name)
        params.append(ParamDraft(name, typ, pname in required and required_body, _text(prop, "description"), "body",
                                 _enum(prop), pname if name != pname else ""))
    return params


def _json_media(node: SchemaPath) -> SchemaPath | None:
    if "content" not in node.keys():
        return None
    content = node / "content"
    fallback = None
    for media_type in content.keys():
        mt = str(media_type).split(";")[0].strip().lower()
        if "schema" not in (content / media_type).keys():
            continue
        if mt == "application/json" or mt.endswith("+json"):
            return content / media_type
        if mt in ("*/*", "text/json", "application/*"):
            fallback = fallback or content / media_type
    return fallback


def _response(op: SchemaPath, notes: list[str]) -> _Returned:
    if "responses" not in op.keys():
        raise _Unsupported("no responses declared")
    responses = op / "responses"
    codes = sorted((str(c) for c in responses.keys() if str(c).upper().startswith("2")), key=lambda c: (c != "200", c))
    codes += [c for c in map(str, responses.keys()) if c == "default"]  # openFEC declares only `default`
    media = next((m for c in codes if (m := _json_media(responses / c)) is not None), None)
    if media is None:
        raise _Unsupported("no JSON response schema for a 2xx answer, so what it returns is unknown")
    schema = _unwrap(media / "schema")
    shape = _ref_name(media, "schema")
    kind = _type(schema)
    example = _media_example(media)
    if kind == "array":
        return _array(schema, notes, shape, example=example)
    if kind == "object":
        envelope = _envelope(schema)
        if envelope is not None:
            prop_name, inner, siblings = envelope
            held = example.get(prop_name) if isinstance(example, dict) else None
            if _type(inner) == "array":
                returned = _array(inner, notes, shape, envelope=prop_name, example=held)
            else:
                returned = _Returned("record", _fields(inner, notes, depth=1, example=held), None, unwrap=prop_name)
            returned.shape = returned.shape or _held_ref(schema, prop_name) or shape
            what = "a page" if returned.returns != "record" else "a wrapper"
            notes.append(f"the answer is {what} ({', '.join(siblings) or 'nothing else'} beside `{prop_name}`): "
                         f"unwrapped to the {returned.returns} in `{prop_name}`")
            return returned
        fields = _fields(schema, notes, depth=1, example=example)
        if not fields:
            notes.append("the record declares no attributes the spec can hold (a map or an untyped object); review")
        return _Returned("record", fields, shape)
    raise _Unsupported(f"the response is a single {kind or 'untyped'} value, not a record or a list")


def _array(schema: SchemaPath, notes: list[str], outer: str | None, envelope: str | None = None,
           example: Any = None) -> _Returned:
    items_ref = _ref_name(schema, "items")
    items = _unwrap(schema / "items") if "items" in schema.keys() else None
    if items is None:
        raise _Unsupported("the response is an array with no `items` schema")
    item_kind = _type(items)
    if item_kind == "object":
        return _Returned("records", _fields(items, notes, depth=1, example=example), items_ref, unwrap=envelope)
    if item_kind in _SCALARS:
        title = _val(schema, "title", None)
        name = title if isinstance(title, str) else envelope
        return _Returned("values", [], None, name, unwrap=envelope)
    raise _Unsupported(f"the response is an array of {item_kind or 'mixed'} items")


def _envelope(schema: SchemaPath) -> tuple[str, SchemaPath, list[str]] | None:
    """(property, its schema, the other properties) when the object only wraps what it holds:
    one array or object property named like results/data/items, beside nothing but paging and
    status fields (words.yaml). A page of records, or GeoDB's `{"data": {...}}`."""
    props = _properties(schema) or []
    w = words()
    held = [(n, _unwrap(p)) for n, p in props if snake(n) in w.envelope_arrays and _type(_unwrap(p)) in ("array", "object")]
    if len(held) != 1:
        return None
    name, inner = held[0]
    siblings = [n for n, _ in props if n != name]
    if any(snake(n) not in w.paging and n not in w.paging for n in siblings):
        return None
    return name, inner, siblings


def _held_ref(schema: SchemaPath, name: str) -> str | None:
    """The schema name of an envelope's held property, looking into `allOf` parts too."""
    parts = [schema] + (list(schema / "allOf") if "allOf" in schema.keys() else [])
    for part in parts:
        part = _unwrap(part)
        if "properties" in part.keys() and name in (part / "properties").keys():
            found = _ref_name(part / "properties", name)
            if found:
                return found
    return None


def _ref_name_of(node: SchemaPath) -> str | None:
    """The component name `node` itself is a `$ref` to, read from its parent (reading a node
    follows its `$ref`), or that of its single non-null option."""
    try:
        named = _ref_name(node.parent, node.name)
    except Exception:  # noqa: BLE001 - the root, or a path the accessor cannot go up from
        named = None
    if named:
        return named
    found = _options(node)
    return _ref_name_of(found[1][0]) if found and len(found[1]) == 1 else None


def _ref_name(parent: SchemaPath, key: str) -> str | None:
    """The component name a `$ref` under `parent[key]` points to (schema identity), if any."""
    raw = parent.read_value() if hasattr(parent, "read_value") else None
    if isinstance(raw, list) and str(key).isdigit() and int(key) < len(raw):
        value = raw[int(key)]
    else:
        value = raw.get(key) if isinstance(raw, dict) else None
    ref = value.get("$ref") if isinstance(value, dict) else None
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def _options(schema: SchemaPath) -> tuple[str, list[SchemaPath]] | None:
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema.keys():
            return combinator, [o for o in schema / combinator if _type(o) != "null"]
    return None


def _unwrap(schema: SchemaPath) -> SchemaPath:
    """`anyOf: [X, {type: null}]` (how FastAPI and 3.1 write optional) read as X; a union of
    objects stays (its properties are merged); a union of scalars reads as its first."""
    found = _options(schema)
    if found is None:
        return schema
    combinator, options = found
    if len(options) == 1:
        return _unwrap(options[0])
    kinds = {_type(_unwrap(o)) for o in options}
    if kinds == {"object"}:
        return schema
    if kinds and kinds <= set(_SCALARS):
        return _unwrap(next(o for o in options if _type(_unwrap(o)) == "string") if "string" in kinds else options[0])
    raise _Unsupported(f"a {combinator} of {len(options)} schemas (polymorphic values are not supported)")


def _type(schema: SchemaPath) -> str | None:
    value = _val(schema, "type", None)
    if isinstance(value, list):  # 3.1: type: [string, "null"]
        kinds = [v for v in value if v != "null"]
        value = kinds[0] if len(kinds) == 1 else None
    if value is None and ("properties" in schema.keys() or "allOf" in schema.keys()):
        return "object"
    if value is None and "items" in schema.keys():
        return "array"
    if value is None and (found := _options(schema)) is not None:
        kinds = {_type(o) for o in found[1]}
        return "object" if kinds == {"object"} else None
    return value if isinstance(value, str) else None


def _properties(schema: SchemaPath) -> list[tuple[str, SchemaPath]] | None:
    """Properties of an object schema, `allOf` parts merged in order, and the union of the
    options of a `oneOf`/`anyOf` of objects (an attribute some records lack reads as missing)."""
    if _type(schema) != "object":
        return None
    props: dict[str, SchemaPath] = {}
    parts = list(schema / "allOf") if "allOf" in schema.keys() else []
    found = _options(schema)
    if found is not None:
        parts += found[1]
    for part in parts:
        for name, prop in _properties(_unwrap(part)) or []:
            props.setdefault(name, prop)
    if "properties" in schema.keys() and isinstance(_val(schema, "properties", None), dict):
        for name in (schema / "properties").keys():
            props[str(name)] = schema / "properties" / name
    return list(props.items())


def _scalar(schema: SchemaPath, what: str) -> ScalarKind:
    schema = _unwrap(schema)
    kind = _type(schema)
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array" and "items" in schema.keys() and _type(_unwrap(schema / "items")) in _SCALARS:
        return "list[str]"
    if kind is None and "enum" in schema.keys():
        return "str"
    raise _Unsupported(f"{what} is of type {kind or 'unknown'} (strings, numbers, booleans and lists of them are supported)")


def _fields(schema: SchemaPath, notes: list[str], depth: int, example: Any = None) -> list[FieldDraft]:
    """The attributes of an object schema. Records nest one level, as the spec does; objects below
    that are read on (to MAX_READ_DEPTH) so that the references in them can be lifted to the top
    (soay/importers/nesting.py). `example` is the document's example of the object, if any: each
    attribute keeps its value (an `index` shows whether a person can type it, a `url` where a
    reference points)."""
    out: list[FieldDraft] = []
    shown = _first_record(example) or _first_record(_val(schema, "example", None)) or {}
    deep = depth >= MAX_DEPTH  # an object here is below what the spec nests: lifted or left out, as a whole
    inner_notes: list[str] = [] if deep else notes  # so what is left out inside it is not said attribute by attribute
    for name, prop in _properties(schema) or []:
        where = f"attribute {name!r}"
        value = shown.get(name)
        try:
            prop_schema = _unwrap(prop)
            if value is None:
                value = _val(prop_schema, "example", None)
            kind = _type(prop_schema)
            if kind == "array" and "items" in prop_schema.keys() and _type(_unwrap(prop_schema / "items")) == "object":
                if depth >= MAX_READ_DEPTH:
                    raise _Unsupported(f"{where}: records nested more than one level")
                items = _unwrap(prop_schema / "items")
                out.append(
                    FieldDraft(name, "records", _text(prop, "description") or _text(prop_schema, "description"),
                               _fields(items, inner_notes, depth + 1, value), _ref_name(prop_schema, "items"))
                )
                continue
            if kind == "object":
                if depth >= MAX_READ_DEPTH:
                    raise _Unsupported(f"{where} is an object inside nested records (records nest one level)")
                inner = _fields(prop_schema, inner_notes, depth + 1, value)
                if not inner:
                    raise _Unsupported(f"{where} is an object without attributes the spec can hold")
                if not deep:
                    notes.append(f"attribute {name!r}, one object, is read as a list of one record")
                out.append(FieldDraft(name, "records", _text(prop, "description") or _text(prop_schema, "description"),
                                      inner, _ref_name_of(prop), "one"))
                continue
            typ = _scalar(prop_schema, where)
        except _Unsupported as e:
            notes.append(f"left out: {e}")
            continue
        out.append(FieldDraft(name, typ, _text(prop, "description") or _text(prop_schema, "description"),
                              example=_example_text(value)))
    return out
