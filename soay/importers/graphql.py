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
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    build_client_schema,
    build_schema,
)
from graphql.pyutils import Undefined

from soay.importers.drafts import DocumentDraft, FieldDraft, OperationDraft, ParamDraft, ScalarKind, nested_binding
from soay.importers.errors import Problem, SpecImportError
from soay.importers.source import Document

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
    declared = len(query.fields) + len(problems)
    draft = DocumentDraft(
        protocol="graphql",
        title=doc.origin.rsplit("/", 1)[-1].split(".")[0],
        description=query.description or "",
        operations=[],
        problems=problems,
        transport={"endpoint": DEFAULT_ENDPOINT},
    )
    lookups = _lookup_types(query)
    for name, field in query.fields.items():
        try:
            operation = _operation(name, field, lookups)
        except _Unsupported as e:
            draft.problems.append(Problem(name, str(e)))
            continue
        draft.operations.append(operation)  # one without arguments is a head by itself (a list, a record)
    draft.operation_count = declared
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


def _lookup_types(query: GraphQLObjectType) -> set[str]:
    """Types some query field returns one of, given arguments (`person(id)` -> Person)."""
    out: set[str] = set()
    for field in query.fields.values():
        typ, _ = _unwrap(field.type)
        if field.args and isinstance(typ, (GraphQLObjectType, GraphQLInterfaceType)):
            out.add(typ.name)
    return out


def _operation(name: str, field: GraphQLField, lookups: set[str] = frozenset()) -> OperationDraft:  # type: ignore[assignment]
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
    binding: dict[str, Any] = {"field": name}
    connection = _connection(inner) if not listed else None
    if connection is not None:
        list_name, item = connection
        fields, sub = _fields(item, notes, depth=1, nested=item.name not in lookups)
        if item.name in lookups:
            notes.append(f"its {item.name} records are read without their nested records: the lookup of a {item.name} reads those")
        returns, selection, shape, values_name = "records", f"{list_name} {{ {sub} }}", item.name, None
        binding["unwrap"] = list_name
        notes.append(f"returns a connection ({inner.name}): read as the records of its `{list_name}` list")
    elif isinstance(inner, (GraphQLObjectType, GraphQLInterfaceType)):
        nested = not (listed and inner.name in lookups)
        fields, selection = _fields(inner, notes, depth=1, nested=nested)
        if not nested:
            notes.append(f"its {inner.name} records are read without their nested records: the lookup of a {inner.name} reads those")
        returns = "records" if listed else "record"
        shape: str | None = inner.name
        values_name = None
        if isinstance(inner, GraphQLInterfaceType):
            notes.append(f"returns the interface {inner.name}: only the fields every implementation has")
    elif listed and isinstance(inner, (GraphQLScalarType, GraphQLEnumType)):
        returns, fields, selection, shape, values_name = "values", [], "", None, None
    else:
        raise _Unsupported(f"returns {field.type} (an object type or a list of objects or of scalars is supported)")
    if nested := nested_binding(fields):
        binding["nested"] = nested
    binding["query"] = _document(name, field, params, selection)
    return OperationDraft(
        name=name,
        description=" ".join((field.description or "").split()),
        params=params,
        returns=returns,  # type: ignore[arg-type]
        fields=fields,
        shape=shape,
        values_name=values_name,
        binding=binding,
        notes=notes,
    )


def _connection(typ: Any) -> tuple[str, Any] | None:
    """(list field, item type) of a Relay connection with a shortcut list (SWAPI's
    `PeopleConnection.people`): an object with `edges` or `pageInfo` and one other list of objects."""
    if not isinstance(typ, GraphQLObjectType) or not ({"edges", "pageInfo"} & set(typ.fields)):
        return None
    lists = []
    for fname, f in typ.fields.items():
        t, _ = _unwrap(f.type)
        if fname != "edges" and isinstance(t, GraphQLList):
            item, _ = _unwrap(t.of_type)
            if isinstance(item, (GraphQLObjectType, GraphQLInterfaceType)):
                lists.append((fname, item))
    return lists[0] if len(lists) == 1 else None


def _fields(obj: Any, notes: list[str], depth: int, nested: bool = True) -> tuple[list[FieldDraft], str]:
    """The attributes of an object (or interface) type and the selection set that asks for them.

    A list of objects nests as records; a single object (a person's `homeworld`) and a
    connection (a person's `filmConnection`) nest too, one level deep: the binding tells the
    transport to read the object as a list of one record, and the connection as its list."""
    out: list[FieldDraft] = []
    selection: list[str] = []
    for name, field in obj.fields.items():
        where = f"{obj.name}.{name}"
        if any(isinstance(a.type, GraphQLNonNull) and a.default_value is Undefined for a in field.args.values()):
            notes.append(f"left out: {where} needs arguments")
            continue
        typ, _ = _unwrap(field.type)
        inner, _ = _unwrap(typ.of_type) if isinstance(typ, GraphQLList) else (typ, False)
        if isinstance(inner, (GraphQLObjectType, GraphQLInterfaceType)) and not nested:
            continue
        if isinstance(typ, GraphQLList) and isinstance(inner, GraphQLObjectType):
            if depth >= 2:
                notes.append(f"left out: {where} nests records more than one level")
                continue
            sub, sub_selection = _fields(inner, notes, depth + 1)
            out.append(FieldDraft(name, "records", field.description or "", sub, inner.name))
            selection.append(f"{name} {{ {sub_selection} }}")
            continue
        if isinstance(inner, (GraphQLObjectType, GraphQLInterfaceType)):
            if depth >= 2:
                notes.append(f"left out: {where} is an object inside nested records (records nest one level)")
                continue
            connection = _connection(inner)
            item, holder = (connection[1], connection[0]) if connection else (inner, "one")
            try:
                sub, sub_selection = _fields(item, notes, depth + 1)
            except _Unsupported as e:
                notes.append(f"left out: {where}: {e}")
                continue
            out.append(FieldDraft(name, "records", " ".join((field.description or "").split()), sub, item.name, holder))
            inner_selection = f"{holder} {{ {sub_selection} }}" if connection else sub_selection
            selection.append(f"{name} {{ {inner_selection} }}")
            notes.append(f"attribute {name!r}, " + (f"a connection, is read as its {holder} records" if connection
                                                     else "one object, is read as a list of one record"))
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
