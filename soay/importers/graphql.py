"""GraphQL schemas (SDL, or an introspection result) as operation drafts.

graphql-core parses and validates the schema; each field of the query type is an API, its
arguments are the parameters, and the object type it returns is the record whose fields are
the attributes. Mutations and subscriptions are reported, never imported: an agent that answers
questions must not be able to change the data it reads. The binding of each API is the query
document that selects exactly the attributes of the spec.
"""

from __future__ import annotations

from typing import Any

from graphql import (
    GraphQLEnumType,
    GraphQLError,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    build_client_schema,
    build_schema,
    get_introspection_query,
)

from graphql.pyutils import Undefined

from soay.importers.drafts import DocumentDraft, FieldDraft, OperationDraft, ParamDraft, ScalarKind
from soay.importers.errors import Problem, SpecImportError
from soay.importers.source import Document

INTROSPECTION_QUERY = get_introspection_query(descriptions=True)
DEFAULT_ENDPOINT = "/graphql"
_SCALARS: dict[str, ScalarKind] = {"String": "str", "Int": "int", "Float": "float", "Boolean": "bool", "ID": "id"}


def read_graphql(doc: Document) -> DocumentDraft:
    schema = _schema(doc)
    query = schema.query_type
    if query is None or not query.fields:
        raise SpecImportError(f"{doc.origin}: the GraphQL schema has no query type, so nothing to read from")
    problems: list[Problem] = []
    for kind, root in (("mutation", schema.mutation_type), ("subscription", schema.subscription_type)):
        for name in root.fields if root else {}:
            problems.append(Problem(name, f"a {kind}; only query fields become APIs (an agent must not change data)"))
    draft = DocumentDraft(
        protocol="graphql",
        title=doc.origin.rsplit("/", 1)[-1].split(".")[0],
        description=query.description or "",
        operations=[],
        problems=problems,
        transport={"endpoint": DEFAULT_ENDPOINT},
    )
    for name, field in query.fields.items():
        try:
            operation = _operation(name, field)
        except _Unsupported as e:
            draft.problems.append(Problem(name, str(e)))
            continue
        if operation.params:
            draft.operations.append(operation)
        elif operation.returns == "records":
            draft.listers.append(operation)
            draft.problems.append(Problem(name, "takes no argument, so it is no API of the spec; kept to sample head entities"))
        else:
            draft.problems.append(Problem(name, "takes no argument and returns no list: nothing a question could start from"))
    return draft


class _Unsupported(Exception):
    pass


def _schema(doc: Document) -> GraphQLSchema:
    try:
        if doc.kind == "graphql-introspection":
            return build_client_schema(doc.content)
        return build_schema(doc.content)
    except GraphQLError as e:
        raise SpecImportError(f"{doc.origin}: not a valid GraphQL schema: {e.message}") from None
    except (TypeError, ValueError, KeyError) as e:
        raise SpecImportError(f"{doc.origin}: not a valid GraphQL schema: {e}") from None


def _unwrap(typ: Any) -> tuple[Any, bool]:
    """The type without NonNull, and whether it was required."""
    if isinstance(typ, GraphQLNonNull):
        return typ.of_type, True
    return typ, False


def _scalar(typ: Any, what: str) -> ScalarKind:
    typ, _ = _unwrap(typ)
    if isinstance(typ, GraphQLList):
        inner, _ = _unwrap(typ.of_type)
        if isinstance(inner, (GraphQLScalarType, GraphQLEnumType)) and _SCALARS.get(inner.name, "str") in ("str", "id"):
            return "list[str]"
        raise _Unsupported(f"{what} is a list of {inner} (lists of strings are supported)")
    if isinstance(typ, GraphQLEnumType):
        return "str"
    if isinstance(typ, GraphQLScalarType):
        return _SCALARS.get(typ.name, "str")
    if isinstance(typ, GraphQLInputObjectType):
        raise _Unsupported(f"{what} is an input object {typ.name} (scalar arguments are supported)")
    raise _Unsupported(f"{what} is of type {typ}")


def _operation(name: str, field: GraphQLField) -> OperationDraft:
    notes: list[str] = []
    params: list[ParamDraft] = []
    for arg_name, arg in field.args.items():
        _, required = _unwrap(arg.type)
        required = required and arg.default_value is Undefined
        try:
            typ = _scalar(arg.type, f"argument {arg_name!r}")
        except _Unsupported as e:
            if required:
                raise
            notes.append(f"optional input left out: {e}")
            continue
        params.append(ParamDraft(arg_name, typ, required, arg.description or "", "argument"))
    typ, _ = _unwrap(field.type)
    listed = isinstance(typ, GraphQLList)
    inner, _ = _unwrap(typ.of_type) if listed else (typ, False)
    if isinstance(inner, GraphQLObjectType):
        fields, selection = _fields(inner, notes, depth=1)
        returns = "records" if listed else "record"
        shape: str | None = inner.name
        values_name = None
    elif listed and isinstance(inner, (GraphQLScalarType, GraphQLEnumType)):
        returns, fields, selection, shape, values_name = "values", [], "", None, None
    else:
        raise _Unsupported(f"returns {field.type} (an object type or a list of objects or of scalars is supported)")
    return OperationDraft(
        name=name,
        description=" ".join((field.description or "").split()),
        params=params,
        returns=returns,  # type: ignore[arg-type]
        fields=fields,
        shape=shape,
        values_name=values_name,
        binding={"field": name, "query": _document(name, field, params, selection)},
        notes=notes,
    )


def _fields(obj: GraphQLObjectType, notes: list[str], depth: int) -> tuple[list[FieldDraft], str]:
    """The attributes of an object type and the selection set that asks for them."""
    out: list[FieldDraft] = []
    selection: list[str] = []
    for name, field in obj.fields.items():
        where = f"{obj.name}.{name}"
        if any(isinstance(a.type, GraphQLNonNull) and a.default_value is Undefined for a in field.args.values()):
            notes.append(f"left out: {where} needs arguments")
            continue
        typ, _ = _unwrap(field.type)
        inner, _ = _unwrap(typ.of_type) if isinstance(typ, GraphQLList) else (typ, False)
        if isinstance(typ, GraphQLList) and isinstance(inner, GraphQLObjectType):
            if depth >= 2:
                notes.append(f"left out: {where} nests records more than one level")
                continue
            sub, sub_selection = _fields(inner, notes, depth + 1)
            out.append(FieldDraft(name, "records", field.description or "", sub, inner.name))
            selection.append(f"{name} {{ {sub_selection} }}")
            continue
        if isinstance(inner, GraphQLObjectType):
            notes.append(f"left out: {where} is a nested object (only lists of records nest)")
            continue
        try:
            kind = _scalar(field.type, f"field {where}")
        except _Unsupported as e:
            notes.append(f"left out: {e}")
            continue
        out.append(FieldDraft(name, kind, " ".join((field.description or "").split())))
        selection.append(name)
    if not selection:
        raise _Unsupported(f"{obj.name} has no field the spec can hold")
    return out, " ".join(selection)


def _document(name: str, field: GraphQLField, params: list[ParamDraft], selection: str) -> str:
    """The query document for one API: its variables typed as the schema declares them."""
    kept = {p.name for p in params}
    variables = [f"${a}: {arg.type}" for a, arg in field.args.items() if a in kept]
    arguments = [f"{a}: ${a}" for a in field.args if a in kept]
    head = f"query {name}({', '.join(variables)})" if variables else f"query {name}"
    call = f"{name}({', '.join(arguments)})" if arguments else name
    return f"{head} {{ {call}{f' {{ {selection} }}' if selection else ''} }}"
