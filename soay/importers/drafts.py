"""The importers' common intermediate form: operations as read from a document, before inference.

OpenAPI and GraphQL differ in syntax but describe the same things (an operation, its inputs,
the shape of what it returns, the name of that shape); the drafts hold exactly that, so the
inference of kinds, entities and relations (soay/importers/infer.py) is written once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ScalarKind = Literal["str", "int", "float", "bool", "list[str]", "id"]
"""`id` marks a GraphQL ID (an identifier by declaration rather than by name)."""


@dataclass
class FieldDraft:
    """A returned attribute; `records` nests a list of sub-records (one level, as the spec allows)."""

    name: str
    type: ScalarKind | Literal["records"]
    description: str = ""
    fields: list[FieldDraft] = field(default_factory=list)
    shape: str | None = None
    """The schema or type name of the nested records ($ref / GraphQL type identity)."""


@dataclass
class ParamDraft:
    name: str
    type: ScalarKind
    required: bool
    description: str = ""
    location: str = "body"
    """path, query or body (OpenAPI), argument (GraphQL)."""


@dataclass
class OperationDraft:
    name: str
    description: str
    params: list[ParamDraft]
    returns: Literal["record", "records", "values"]
    fields: list[FieldDraft]
    shape: str | None
    """The schema or type name of the returned record(s)."""
    values_name: str | None = None
    """For `values`: the name of the list (a schema title), if the document gives one."""
    binding: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """What was carried over with a caveat (skipped optional inputs, fields left out)."""


@dataclass
class DocumentDraft:
    protocol: Literal["openapi", "graphql"]
    title: str
    description: str
    operations: list[OperationDraft]
    problems: list[Any]
    transport: dict[str, Any] = field(default_factory=dict)
    """Protocol-wide facts: servers (OpenAPI), the endpoint path (GraphQL)."""
    listers: list[OperationDraft] = field(default_factory=list)
    """Operations without inputs that list records: not APIs (an API takes an input), but a way to
    sample head entities from a live service."""
