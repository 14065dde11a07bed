"""From operation drafts to a spec: what the importer has to guess, in one place.

The spec needs facts no document states outright, so each is inferred by a rule a person can
check, and every inference is recorded as a note that the writer puts beside it:

- **Entities** come from identifiers: a field named `<x>_id` / `<x>Id` refers to entity `x`,
  and a field named `id` (or typed GraphQL `ID`) to the entity of the record it sits in, named
  by its schema or type (`$ref` / type identity). The label comes from the identifier's
  description ("identifier of the scholar") when it has one.
- **Kind**: an operation that requires an identifier looks up by id (`exact`); one that takes
  free text and returns a list searches (`fuzzy`).
- **Relation**: a lookup that returns a single record of its input's entity stays on it
  (`self`), as does one returning plain values; one that returns a list of the same entity, or
  records of another entity, moves (named after the operation: getCoauthors -> coauthor); nested
  record lists move along their attribute (authors -> author).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from soay.importers.drafts import DocumentDraft, FieldDraft, OperationDraft, ParamDraft
from soay.importers.errors import Problem, SpecImportError
from soay.spec import ApiSpec

_ID_NAME = re.compile(r"^(?P<stem>[A-Za-z][A-Za-z0-9]*?)_?(?:id|Id|ID)$")
_LABEL = re.compile(r"\b(?:identifier|id|ID|key)\s+of\s+(?:the|a|an)\s+(?P<label>[A-Za-z][\w ]{0,40}?)\s*\.?$", re.I)
_SHAPE_SUFFIXES = ("record", "records", "hit", "hits", "summary", "details", "detail", "response", "item", "result", "node", "type", "values")
_LOOKUP_PREFIXES = ("get", "fetch", "read", "find", "list", "search", "lookup", "show", "query")


@dataclass
class Inferred:
    """The spec (as plain data, for the writer), its notes, and the binding of every API."""

    domain: str
    description: str
    entities: dict[str, dict[str, str]]
    apis: list[dict[str, Any]]
    notes: dict[str, list[str]] = field(default_factory=dict)
    """Per API name (and `entities`): what was inferred, in words."""
    bindings: dict[str, dict[str, Any]] = field(default_factory=dict)
    listers: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def spec(self) -> ApiSpec:
        return ApiSpec.model_validate(
            {"domain": self.domain, "description": self.description, "entities": self.entities, "apis": self.apis}
        )


def snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return re.sub(r"\W+", "_", s).strip("_").lower()


def singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def id_stem(name: str) -> str | None:
    """`person_id` -> person, `petId` -> pet; None for names that are not identifiers."""
    m = _ID_NAME.match(name)
    return snake(m["stem"]) if m and name.lower() != "id" else None


def shape_entity(shape: str | None) -> str | None:
    """`PersonSummary` -> person: a schema or type name with presentation suffixes removed."""
    if not shape:
        return None
    words = snake(shape).split("_")
    while len(words) > 1 and words[-1] in _SHAPE_SUFFIXES:
        words.pop()
    if len(words) > 1 and words[0] in _LOOKUP_PREFIXES:
        words.pop(0)
    return singular("_".join(words)) or None


class _Entities:
    """Entity names, keys and labels, gathered from every identifier the document shows."""

    def __init__(self) -> None:
        self.keys: dict[str, str] = {}
        self.labels: dict[str, str] = {}
        self.why: dict[str, str] = {}
        self.rename: dict[str, str] = {}

    def see(self, stem: str, key: str, description: str, where: str) -> None:
        self.keys.setdefault(stem, key)
        self.why.setdefault(stem, f"key {key} ({where})")
        m = _LABEL.search(description or "")
        if m and stem not in self.labels:
            self.labels[stem] = m["label"].strip().lower()

    def finish(self) -> None:
        """Name an abbreviated entity by its one-word label (pub_id, "the publication" -> publication)."""
        for stem, label in self.labels.items():
            if " " not in label and label != stem and label.startswith(stem) and label not in self.keys:
                self.rename[stem] = label

    def name(self, stem: str) -> str:
        return self.rename.get(stem, stem)

    def spec(self) -> dict[str, dict[str, str]]:
        return {
            self.name(stem): {"key": key, "label": self.labels.get(stem, stem.replace("_", " "))}
            for stem, key in self.keys.items()
        }


def infer(draft: DocumentDraft, domain: str) -> Inferred:
    entities = _Entities()
    record_entity: dict[int, str | None] = {}
    ops = draft.operations
    # 1. the entity of every record shape, from its identifier fields
    for op in ops + draft.listers:
        _gather(op.fields, op.shape, op.name, entities, record_entity)
    for op in ops:
        for p in op.params:
            stem = id_stem(p.name)
            if stem:
                entities.see(stem, p.name, p.description, f"parameter of {op.name}")
            elif p.type == "id" or p.name == "id":
                target = record_entity.get(id(op.fields)) or shape_entity(op.shape) or singular(snake(op.name))
                entities.see(target, p.name, p.description, f"identifier parameter of {op.name}")
    entities.finish()
    result = Inferred(domain, draft.description or draft.title or domain, {}, [], problems=list(draft.problems))
    result.notes["entities"] = [f"{entities.name(s)}: {w}" for s, w in entities.why.items()]
    for op in ops:
        api, notes = _api(op, entities, record_entity)
        result.apis.append(api)
        result.notes[op.name] = notes + op.notes
        result.bindings[op.name] = op.binding
    for op in draft.listers:
        stem = record_entity.get(id(op.fields))
        if stem:
            result.listers.append({"name": op.name, "entity": entities.name(stem), **op.binding})
    result.entities = entities.spec()
    if not result.apis:
        reasons = "; ".join(str(p) for p in result.problems[:10]) or "the document declares no operations"
        raise SpecImportError(f"no operation could be imported: {reasons}")
    return result


def _gather(fields: list[FieldDraft], shape: str | None, op: str, entities: _Entities, out: dict[int, str | None]) -> None:
    own = shape_entity(shape)
    stems: list[tuple[str, FieldDraft]] = []
    for f in fields:
        stem = id_stem(f.name) or (own if (f.name == "id" or f.type == "id") and own else None)
        if stem:
            stems.append((stem, f))
            entities.see(stem, f.name, f.description, f"{shape or op}.{f.name}")
        if f.type == "records":
            _gather(f.fields, f.shape, op, entities, out)
    preferred = next((s for s, f in stems if own and (s == own or own.startswith(s))), None)
    out[id(fields)] = preferred or (stems[0][0] if stems else None)


def _ref_type(f: FieldDraft | ParamDraft, own: str | None, entities: _Entities) -> str | None:
    stem = id_stem(f.name)
    if stem:
        return "ref:" + entities.name(stem)
    if (f.name == "id" or f.type == "id") and own:
        return "ref:" + entities.name(own)
    return None


def _attributes(fields: list[FieldDraft], own: str | None, entities: _Entities, record_entity: dict[int, str | None]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for f in fields:
        entry: dict[str, Any] = {"name": f.name}
        if f.type == "records":
            entry["type"] = "records"
            entry["description"] = f.description
            entry["relation"] = singular(snake(f.name))
            entry["attributes"] = _attributes(f.fields, record_entity.get(id(f.fields)) or shape_entity(f.shape), entities, record_entity)
            out.append(entry)
            continue
        entry["type"] = _ref_type(f, own, entities) or ("str" if f.type == "id" else f.type)
        entry["description"] = f.description
        out.append(entry)
    return out


def _api(op: OperationDraft, entities: _Entities, record_entity: dict[int, str | None]) -> tuple[dict[str, Any], list[str]]:
    notes: list[str] = []
    own = record_entity.get(id(op.fields))
    if own is None and op.returns != "values":
        own = shape_entity(op.shape)
    params: list[dict[str, Any]] = []
    ref_params: list[tuple[ParamDraft, str]] = []
    for p in op.params:
        ref = _ref_type(p, own if p.name == "id" or p.type == "id" else None, entities)
        if ref:
            ref_params.append((p, ref[4:]))
            notes.append(f"parameter {p.name} refers to {ref[4:]} ({'id-like name' if id_stem(p.name) else 'identifier type'})")
        params.append({"name": p.name, "type": ref or ("str" if p.type == "id" else p.type), "required": p.required, "description": p.description})
    required_refs = [(p, e) for p, e in ref_params if p.required]
    texts = [p for p in op.params if p.type == "str" and not id_stem(p.name)]
    if required_refs:
        kind = "exact"
        notes.append(f"kind exact: looks up by id ({', '.join(p.name for p, _ in required_refs)})")
    elif texts and op.returns == "records":
        kind = "fuzzy"
        notes.append(f"kind fuzzy: searches by free text ({', '.join(p.name for p in texts)}) and returns candidates")
    else:
        kind = "exact"
        notes.append("kind exact: takes neither an identifier nor free text to search by; review")
    input_entity = required_refs[0][1] if required_refs else None
    if op.returns == "values":
        entity = input_entity or singular(snake(_strip_verb(op.name)))
        if input_entity is None:
            entities.see(entity, "", "", f"values of {op.name} without an identifier")
        relation = "self"
        name = op.values_name if op.values_name and op.values_name.isidentifier() else snake(_strip_verb(op.name)) or "values"
        attributes = [{"name": name, "type": "list[str]", "description": op.description}]
        notes.append(f"returns plain values, named {name!r}" + (" (the schema's title)" if name == op.values_name else ""))
    else:
        entity = entities.name(own) if own else singular(snake(_strip_verb(op.name)))
        if own is None:
            entities.see(entity, "", "", f"records of {op.name} without an identifier")
            notes.append(f"its records carry no identifier; entity {entity!r} named after the operation")
        attributes = _attributes(op.fields, own, entities, record_entity)
        if kind == "fuzzy":
            relation = "search"
        elif input_entity == entity and op.returns == "record":
            relation = "self"
        elif input_entity is None:
            relation = "self"
        else:
            relation = singular(snake(_strip_verb(op.name))) or "related"
        notes.append(f"returns {op.returns} of {entity}; relation {relation}")
    if not op.description:
        notes.append("no description in the document; the API name stands in")
    api = {
        "name": op.name,
        "kind": kind,
        "description": op.description or f"{op.name} (no description in the source document)",
        "params": params,
        "returns": op.returns,
        "entity": entity,
        "relation": relation,
        "attributes": attributes,
    }
    return api, notes


def _strip_verb(name: str) -> str:
    s = snake(name)
    for prefix in _LOOKUP_PREFIXES:
        if s.startswith(prefix + "_"):
            return s[len(prefix) + 1 :]
    return s
