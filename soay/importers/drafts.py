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
    holder: str | None = None
    """How the answer holds these records when not as a plain list: `one` for a single object
    (read as a list of one record: a person's `homeworld`), or the name of the list inside an
    object (a GraphQL connection's `films`), or `from:<path>` for references lifted from deeper in
    the answer (soay/importers/nesting.py). The binding says so, and the live transport reshapes."""
    example: str = ""
    """The document's example value of a scalar attribute, as text (`fireball`, `Africa__Abidjan`,
    `/api/ability-scores/str`): what the key looks like, and where a reference points."""


def nested_binding(fields: list[FieldDraft]) -> dict[str, str]:
    """`{attribute: holder}` for the binding: which nested records the transport reshapes."""
    return {f.name: f.holder for f in fields if f.type == "records" and f.holder}


@dataclass
class ParamDraft:
    name: str
    type: ScalarKind
    required: bool
    description: str = ""
    location: str = "body"
    """path, query or body (OpenAPI), argument (GraphQL)."""
    enum: tuple[str, ...] = ()
    """The values it accepts when the document lists them: a choice, never an entity or free text."""
    doc_name: str = ""
    """Its name in the document when the spec calls it otherwise (`with-genres` -> with_genres)."""
    example: str = ""
    """The document's example value, as text (`fireball`, `3`)."""

    @property
    def sent_as(self) -> str:
        return self.doc_name or self.name


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
    path: str = ""
    """The REST path (`/movie/{movie_id}`): its segments name entities. Empty for GraphQL."""


@dataclass
class DocumentDraft:
    protocol: Literal["openapi", "graphql"]
    title: str
    description: str
    operations: list[OperationDraft]
    problems: list[Any]
    """Operations left out, each with the reason."""
    transport: dict[str, Any] = field(default_factory=dict)
    """Protocol-wide facts: servers and auth (OpenAPI), the endpoint path (GraphQL)."""
    warnings: list[Any] = field(default_factory=list)
    """Defects of the document read past (schema violations, odd constructs), named for a person."""
    operation_count: int = 0
    """Operations the document declares, imported or not."""
