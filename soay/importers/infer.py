"""From operation drafts to a spec: what the importer has to guess, in one place.

The spec needs facts no document states outright, so each is inferred by a rule a person can
check, and every inference is recorded as a note that the writer puts beside it:

- **Entities, keys and links** (soay/importers/entities.py): what each input identifies and
  each record is about, from paths, schema names and identifiers; inputs renamed to the key
  their entity's records carry, so a search result's `id` feeds `{movie_id}`. An optional
  identifier of a list (`?committee_id=`, `?countryIds=`) is a reference that is not required:
  a filter, which the API graph couples from the entity's own records (soay/graph.py).
- **Kind**: an operation that requires an identifier looks up by id (`exact`); one that takes
  text a person types (`query`, `q`, `name`, ... or a required free-text input) and returns a
  list searches (`fuzzy`); one that requires neither is a list or record that starts solutions
  by itself (`/movie/popular`), `exact` with no input to look up.
- **Relation**: a lookup that returns its input's own record (or a page of it, or plain values)
  stays on it (`self`); one that returns a related list or another entity moves, named after
  the path's last segment (`/movie/{id}/similar` -> similar) or the operation (getCoauthors ->
  coauthor); nested record lists move along their attribute (authors -> author).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from soay.importers.drafts import DocumentDraft, FieldDraft, OperationDraft, ParamDraft
from soay.importers.entities import Resolution, filters, id_stem, links, resolve, shape_entity, strip_verb
from soay.importers.errors import Problem, SpecImportError
from soay.importers.paths import is_choice, singular
from soay.importers.words import snake, words
from soay.spec import ApiSpec

__all__ = ["Inferred", "infer", "id_stem", "shape_entity", "singular", "snake"]


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
    """APIs that list records without any required input: where a live sampler can start."""
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    operation_count: int = 0

    def spec(self) -> ApiSpec:
        return ApiSpec.model_validate(
            {"domain": self.domain, "description": self.description, "entities": self.entities, "apis": self.apis}
        )


def infer(draft: DocumentDraft, domain: str) -> Inferred:
    res = resolve(draft)
    result = Inferred(domain, draft.description or draft.title or domain, {}, [], problems=list(draft.problems),
                      warnings=list(draft.warnings), operation_count=draft.operation_count or len(draft.operations))
    for op in draft.operations:
        api, notes = _api(op, res)
        result.apis.append(api)
        result.notes[op.name] = res.notes.get(op.name, []) + notes + op.notes
        result.bindings[op.name] = _binding(op, res)
        if api["returns"] == "records" and not any(p["required"] for p in api["params"]):
            result.listers.append({"name": op.name, "entity": api["entity"], **{k: v for k, v in op.binding.items() if k in ("method", "path", "field")}})
    result.entities = res.registry.spec()
    result.notes["entities"] = [f"{res.registry.name(s)}: {w}" for s, w in res.registry.why.items()] + res.entity_notes
    if not result.apis:
        reasons = "; ".join(str(p) for p in result.problems[:10]) or "the document declares no operations"
        raise SpecImportError(f"no operation could be imported: {reasons}")
    return result


def _binding(op: OperationDraft, res: Resolution) -> dict[str, Any]:
    """The document's binding with inputs under their spec names (`names` maps them back)."""
    binding = dict(op.binding)
    if "params" not in binding:
        if renamed := res.attribute_names.get(id(op.fields)):
            binding["fields"] = {spec: answer for answer, spec in renamed.items()}
        return binding
    params: dict[str, str] = {}
    names: dict[str, str] = {}
    for p in op.params:
        spec_name = res.spec_names.get((op.name, p.name), p.name)
        params[spec_name] = binding["params"].get(p.name, p.location)
        if spec_name != p.sent_as:
            names[spec_name] = p.sent_as
    binding["params"] = params
    binding.pop("names", None)
    if names:
        binding["names"] = names
    if renamed := res.attribute_names.get(id(op.fields)):
        binding["fields"] = {spec: answer for answer, spec in renamed.items()}
    return binding


def _attributes(fields: list[FieldDraft], own: str | None, res: Resolution) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    renamed = res.attribute_names.get(id(fields), {})
    for f in fields:
        entry: dict[str, Any] = {"name": renamed.get(f.name, f.name)}
        if f.type == "records":
            entry["type"] = "records"
            entry["description"] = f.description
            entry["relation"] = singular(snake(f.name))
            entry["attributes"] = _attributes(f.fields, res.own(f.fields), res)
            out.append(entry)
            continue
        ref = res.ref_of(f, own)
        entry["type"] = f"ref:{res.registry.name(ref)}" if ref else ("str" if f.type == "id" else f.type)
        entry["description"] = f.description
        out.append(entry)
    return out


def _is_search_text(p: ParamDraft) -> bool:
    return snake(p.sent_as) in words().search_params and p.type in ("str", "list[str]") and not p.enum


def _is_free_text(p: ParamDraft, entity: str | None) -> bool:
    return p.type == "str" and entity is None and not p.enum and not is_choice(p.sent_as, False, p.type)


def _kind(op: OperationDraft, refs: list[tuple[ParamDraft, str]], res: Resolution) -> tuple[str, str]:
    """exact or fuzzy, and the note that says why."""
    required = [(p, e) for p, e in refs if p.required]
    if required:
        return "exact", f"kind exact: looks up by id ({', '.join(p.name for p, _ in required)})"
    if refs:  # optional identifiers of a lookup that requires nothing (links() says which)
        return "exact", f"kind exact: looks up by id ({' or '.join(p.name for p, _ in refs)}, either)"
    entities = {p.name: e for p, e in refs}
    searched = [p.name for p in op.params if _is_search_text(p)]
    typed = [p.name for p in op.params if p.required and _is_free_text(p, entities.get(p.name))]
    if op.returns == "records" and (searched or typed):
        return "fuzzy", f"kind fuzzy: searches by free text ({', '.join(searched or typed)}) and returns candidates"
    what = "a list" if op.returns == "records" else ("values" if op.returns == "values" else "a record")
    needs = [p.name for p in op.params if p.required]
    given = f"; it needs only {', '.join(needs)}, a choice" if needs else ""
    return "exact", f"kind exact: a head that takes no identifier and returns {what} by itself{given}"


def _relation(op: OperationDraft, entity: str, input_entity: str | None, res: Resolution) -> str:
    if input_entity is None:
        return "self"
    shape = res.paths.get(op.name)
    if input_entity == entity and (op.returns == "record" or (shape is not None and shape.ends_with_entity_param)):
        return "self"
    if shape is not None and shape.last_entity_param is not None:
        tail = [t for t in shape.tail_words() if t not in words().list_segments] or shape.tail_words()
        if tail:
            return tail[-1]
    return singular(snake(strip_verb(op.name))) or "related"


def _api(op: OperationDraft, res: Resolution) -> tuple[dict[str, Any], list[str]]:
    notes: list[str] = []
    own = res.own(op.fields) if op.returns != "values" else None
    params: list[dict[str, Any]] = []
    refs: list[tuple[ParamDraft, str]] = []
    for p in op.params:
        entity = res.param_entity.get((op.name, p.name))
        name = res.spec_names.get((op.name, p.name), p.name)
        if entity and not links(op, p) and filters(op, p):
            notes.append(f"parameter {p.name} filters by {entity.replace('_', ' ')}: an optional hop from the "
                         f"{entity.replace('_', ' ')} found before; the operation still starts solutions by itself")
        elif entity and not links(op, p):
            notes.append(f"parameter {p.name} leaves out the {entity.replace('_', ' ')} records it names: "
                         "a plain value, not a link")
            entity = None
        elif entity:
            refs.append((p, entity))
        typ = f"ref:{res.registry.name(entity)}" if entity else ("str" if p.type == "id" else p.type)
        params.append({"name": name, "type": typ, "required": p.required, "description": _param_description(p)})
    kind, why = _kind(op, refs, res)
    notes.append(why)
    required_refs = [e for p, e in refs if p.required] or [e for _, e in refs]
    input_entity = _input_entity(op, required_refs, own, res)
    if kind == "exact" and len(required_refs) > 1:
        notes.append(f"needs {len(required_refs)} identifiers; a solution feeds it only one of them: review")
    if op.returns == "values":
        stem = input_entity or singular(snake(strip_verb(op.name)))
        if input_entity is None and stem not in res.registry.keys:
            res.registry.see(stem, "", "", f"values of {op.name} without an identifier")
        entity = res.registry.name(stem)
        relation = "self"
        name = op.values_name if op.values_name and op.values_name.isidentifier() else snake(strip_verb(op.name)) or "values"
        attributes = [{"name": name, "type": "list[str]", "description": op.description}]
        notes.append(f"returns plain values, named {name!r}" + (" (the schema's title)" if name == op.values_name else ""))
    else:
        stem = own or singular(snake(strip_verb(op.name)))
        if stem not in res.registry.keys:
            res.registry.see(stem, "", "", f"records of {op.name} without an identifier")
        entity = res.registry.name(stem)
        attributes = _attributes(op.fields, own, res)
        relation = "search" if kind == "fuzzy" else _relation(op, stem, input_entity, res)
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


def _input_entity(op: OperationDraft, required: list[str], own: str | None, res: Resolution) -> str | None:
    """The entity an operation is a lookup of: its records' own when it takes theirs, else the
    last one its path names (`/countries/{countryId}/regions/{regionCode}` is about the region)."""
    if not required:
        return None
    if own in required:
        return own
    shape = res.paths.get(op.name)
    last = shape.last_entity_param if shape is not None else None
    return shape.param_entities[last] if last is not None and shape.param_entities[last] in required else required[0]


def _param_description(p: ParamDraft) -> str:
    if p.enum and p.enum[0] not in p.description:
        shown = ", ".join(p.enum[:8]) + (", ..." if len(p.enum) > 8 else "")
        return f"{p.description} (one of: {shown})".strip()
    return p.description
