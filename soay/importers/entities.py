"""Which entity every identifier and every record of a document is about, and how they link.

No document says outright that `GET /search/movie` returns the movies `GET /movie/{movie_id}`
looks up, or that a search result's `id` is what `{movie_id}` takes; the importer reads it from
evidence, strongest first, and records why:

1. **Identifiers** (inputs): a path parameter identifies the resource its path names
   (soay/importers/paths.py: `/movie/{movie_id}` -> movie, `/users/{username}` -> user); an
   input named `<x>_id` identifies x, one named `<x>Ids` a list of ids of a known x; a GraphQL
   `ID` argument, the record it returns. Optional ones of a list are filters (`filters`).
2. **Records** (outputs), for each record shape: its schema name when that names a known entity
   (`MovieDetails` -> movie); else its path (`/movie/{movie_id}` returns a movie; a record of
   `/movie/{movie_id}/credits` is an aspect of the movie; the list of `/users/{u}/repos` is of
   repos); else the lookup a URL in the document's example of it instantiates (a generic
   reference `{index, name, url: "/api/ability-scores/str"}` is an ability score); else the
   known entity its nested attribute names (a spell's `classes`); else, for a record without an
   `id`, the one `<x>_id` among its attributes; else the
   known entity whose records share most of its attributes (a credit's cast are people); else
   its schema name, path or operation name, as a new entity.
3. **Keys**: the attribute that carries an entity's identity in its own records: the input's
   own name when the records carry it, else `id`, else (for name-like inputs) `login`, `slug`,
   `name`... An input named otherwise is renamed to the key in the spec, so the API graph (which
   couples an attribute to the parameter of its name) links a search result's `id` to the
   lookup's `{movie_id}`; the binding keeps the name the document uses. An entity is `typed`
   when a person can write its key (a slug, a code, values the document lists or examples that
   read as words), so a lookup by it starts solutions.

Attribute names never name an entity on their own: `imdb_id` on a movie is an attribute,
not the entity `imdb`, unless some operation takes an `imdb_id`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from soay.importers.drafts import DocumentDraft, FieldDraft, OperationDraft, ParamDraft
from soay.importers.paths import PathShape, is_choice, read_path, singular, without_role
from soay.importers.words import snake, words

_ID_NAME = re.compile(r"^(?P<stem>[A-Za-z][A-Za-z0-9]*?)_?(?:id|Id|ID)$")
_IDS_NAME = re.compile(r"^(?P<stem>[A-Za-z][A-Za-z0-9_]*?)_?(?:ids|Ids|IDs)$")
_LABEL = re.compile(r"\b(?:identifier|id|ID|key)\s+of\s+(?:the|a|an)\s+(?P<label>[A-Za-z][\w ]{0,40}?)\s*\.?$", re.I)
_LOOKUP_PREFIXES = ("get", "fetch", "read", "find", "list", "search", "lookup", "show", "query")
OWN = "<own>"
"""The entity of an `id` argument that is the entity of the record its operation returns."""


def links(op: OperationDraft, p: ParamDraft) -> bool:
    """Whether an input identifying an entity is a link of the API graph: a required one, or one
    of the optional identifiers of a lookup that requires nothing and returns one record (SWAPI's
    `person(id, personID)`). Other optional identifiers are filters of a search or list (openFEC's
    `/candidates/?candidate_id=`); as links they would make every search a successor of
    every record carrying the id, and no search would start a solution."""
    if p.required:
        return True
    return op.returns == "record" and not any(q.required for q in op.params)


def filters(op: OperationDraft, p: ParamDraft) -> bool:
    """Whether an optional identifier that is no key of its operation (`links` says which are)
    links as a filter: a list narrowed to one committee (`/schedules/schedule_a/?committee_id=`,
    GeoDB's `/geo/cities?countryIds=`) is a hop from the committee found before it. The spec
    marks it a reference that is not required, and the API graph (soay/graph.py) couples it from
    the entity's own records without counting it against the list's heading solutions by itself.
    A filter that leaves the entity out (`excludedCountryIds`) is no hop from it."""
    return not p.required and not links(op, p) and not excludes(p.sent_as)


def excludes(name: str) -> bool:
    """`excludedCountryIds`, `exclude_committee_id`: a filter that leaves its entity out (words.yaml)."""
    return snake(name).startswith(tuple(f"{w}_" for w in words().exclusion_prefixes))


def id_stem(name: str) -> str | None:
    """`person_id` -> person, `petId` -> pet; None for names that are not identifiers."""
    m = _ID_NAME.match(name)
    return snake(m["stem"]) if m and name.lower() != "id" else None


def shape_entity(shape: str | None) -> str | None:
    """`PersonSummary` -> person, `MovieListResult` -> movie, `Tfl.Api.Entities.StopPoint` ->
    stop_point: a schema or type name without its namespace and presentation words."""
    if not shape:
        return None
    w = words()
    parts = snake(shape.rsplit(".", 1)[-1]).split("_")
    while len(parts) > 1 and parts[-1] in w.shape_suffixes:
        parts.pop()
    while len(parts) > 1 and parts[0] in w.shape_prefixes:
        parts.pop(0)
    return singular("_".join(parts)) or None


def strip_verb(name: str) -> str:
    """`getCoauthors` -> coauthors, `findCitiesUsingGET` -> cities (springfox's suffix dropped)."""
    s = re.sub(r"_using_(get|post|put|delete|patch)$", "", snake(name))
    for prefix in _LOOKUP_PREFIXES:
        if s.startswith(prefix + "_"):
            return s[len(prefix) + 1 :]
    return s


class Registry:
    """Entity names, keys and labels, gathered from every identifier the document shows."""

    def __init__(self) -> None:
        self.keys: dict[str, str] = {}
        self.labels: dict[str, str] = {}
        self.why: dict[str, str] = {}
        self.rename: dict[str, str] = {}
        self.typed: dict[str, str] = {}
        """Entities whose key a person types, with the reason."""

    def see(self, stem: str, key: str, description: str, where: str) -> None:
        if key and not self.keys.get(stem):
            self.keys[stem] = key
        else:
            self.keys.setdefault(stem, key)
        self.why.setdefault(stem, f"key {key} ({where})" if key else where)
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
            | ({"typed": True} if stem in self.typed else {})
            for stem, key in self.keys.items()
        }


@dataclass
class _Record:
    """One record shape: the top-level record(s) of an operation or a nested list's items."""

    op: OperationDraft
    fields: list[FieldDraft]
    shape: str | None
    nested_in: str | None = None
    """The attribute holding these records when nested (`cast`)."""

    @property
    def names(self) -> set[str]:
        return {f.name for f in self.fields}

    @property
    def has_id(self) -> bool:
        """An `id` of its own (a GraphQL `ID` named `<x>_id` is x's, not the record's)."""
        return any(f.name == "id" or (f.type == "id" and not id_stem(f.name)) for f in self.fields)


@dataclass
class Resolution:
    """What the document's identifiers and records are about; read by soay/importers/infer.py."""

    registry: Registry
    param_entity: dict[tuple[str, str], str] = field(default_factory=dict)
    record_entity: dict[int, str] = field(default_factory=dict)
    """id() of a fields list -> its entity (stem form)."""
    spec_names: dict[tuple[str, str], str] = field(default_factory=dict)
    attribute_names: dict[int, dict[str, str]] = field(default_factory=dict)
    """id() of a top-level fields list -> {answer's name: spec name}: an `id` the spec calls by its
    entity's key (openFEC's `/names/candidates` answers `id`, its other records `candidate_id`)."""
    """(operation, parameter) -> the parameter's name in the spec, when renamed to its entity's key."""
    notes: dict[str, list[str]] = field(default_factory=dict)
    entity_notes: list[str] = field(default_factory=list)
    known: set[str] = field(default_factory=set)
    paths: dict[str, PathShape] = field(default_factory=dict)

    def note(self, op: str, text: str) -> None:
        self.notes.setdefault(op, []).append(text)

    def own(self, fields: list[FieldDraft]) -> str | None:
        return self.record_entity.get(id(fields))

    def ref_of(self, f: FieldDraft, own: str | None) -> str | None:
        """The entity an attribute identifies: its record's own key or `id`, or `<x>_id` of a known x."""
        if own is not None and (f.name == "id" or f.type == "id" or f.name == self.registry.keys.get(own)):
            return own
        stem = id_stem(f.name)
        if stem and stem in self.known:
            return stem
        return None


def resolve(draft: DocumentDraft) -> Resolution:
    """Entities of every input and record, their keys, and the inputs renamed to link."""
    res = Resolution(Registry())
    for op in draft.operations:
        _inputs(op, res)
    res.known = {e for e in res.param_entity.values() if e != OWN}
    _id_lists(draft.operations, res)
    records = _records(draft.operations)
    strong = _strong(records, res)
    _similar(records, strong, res)
    _fallback(records, res)
    _own_inputs(draft.operations, res)
    res.known |= set(res.record_entity.values())
    _keys(draft.operations, records, res)
    _rename(draft.operations, records, res)
    _rename_ids(records, res)
    _unknown_ids(records, res)
    res.registry.finish()
    return res


# ----------------------------------------------------------------------------- inputs


def _inputs(op: OperationDraft, res: Resolution) -> None:
    """The entity each input of `op` identifies, if any."""
    shape = None
    if op.path:
        path_params = {p.sent_as: (bool(p.enum), p.type) for p in op.params if p.location == "path"}
        shape = read_path(op.path, path_params)
        res.paths[op.name] = shape
    for p in op.params:
        key = (op.name, p.name)
        if p.location == "path" and shape is not None:
            entity = shape.param_entities.get(p.sent_as)
            if entity:
                res.param_entity[key] = entity
                res.note(op.name, f"parameter {p.name} identifies {_a(entity)}: {shape.why[p.sent_as]}")
            continue
        stem = without_role(id_stem(p.sent_as) or "")
        if stem and not is_choice(p.sent_as, bool(p.enum), p.type):
            res.param_entity[key] = stem
            res.note(op.name, f"parameter {p.name} refers to {stem} (id-like name)")
        elif p.type == "id" or p.name == "id":
            res.param_entity[key] = OWN


def _id_lists(ops: list[OperationDraft], res: Resolution) -> None:
    """An input named `<x>Ids` takes (comma-separated) ids of x, an entity some other input
    identifies (`countryIds` -> country, `timeZoneIds` -> timezone): a filter by it. A list of
    ids names no new entity, and one that excludes (`excludedCountryIds`) is left a plain value."""
    compact = {e.replace("_", ""): e for e in res.known}
    for op in ops:
        for p in op.params:
            key = (op.name, p.name)
            m = _IDS_NAME.match(p.sent_as)
            if key in res.param_entity or not m or excludes(p.sent_as) or is_choice(p.sent_as, bool(p.enum), p.type):
                continue
            stem = without_role(snake(m["stem"]))
            entity = compact.get(stem.replace("_", "")) or match_known(stem, res.known)
            if entity:
                res.param_entity[key] = entity
                res.note(op.name, f"parameter {p.name} refers to {entity.replace('_', ' ')} (a list of its ids)")


def _own_inputs(ops: list[OperationDraft], res: Resolution) -> None:
    """An `id` argument identifies the record its operation returns (GraphQL `movie(id: ID!)`)."""
    for op in ops:
        for p in op.params:
            key = (op.name, p.name)
            if res.param_entity.get(key) != OWN:
                continue
            entity = res.own(op.fields) or shape_entity(op.shape) or singular(snake(strip_verb(op.name)))
            res.param_entity[key] = entity
            res.note(op.name, f"parameter {p.name} refers to {entity} (identifier type)")


# ----------------------------------------------------------------------------- records


def _records(ops: list[OperationDraft]) -> list[_Record]:
    out: list[_Record] = []
    for op in ops:
        if op.returns == "values":
            continue
        out.append(_Record(op, op.fields, op.shape))
        for f in op.fields:
            if f.type == "records":
                out.append(_Record(op, f.fields, f.shape, f.name))
    return out


def _strong(records: list[_Record], res: Resolution) -> dict[str, set[str]]:
    """Records whose entity a schema name, the path or an `<x>_id` attribute gives; their
    attribute names per entity, for the records that have none of these."""
    strong: dict[str, set[str]] = {}
    for r in records:
        if r.nested_in is None:
            placed = _by_path(r, res) or _by_url(r, res)
        else:
            placed = _by_url(r, res) or _by_attribute(r, res)
        found = _by_shape(r, res) or placed or _by_id_field(r, res)
        if found is None:
            continue
        entity, why = found
        res.record_entity[id(r.fields)] = entity
        res.note(r.op.name, f"{_about(r, entity)}: {why}")
        strong.setdefault(entity, set()).update(r.names)
    return strong


def _about(r: _Record, entity: str) -> str:
    """`its records are movie records`, `its record is a movie record`, `the cast records are person records`."""
    noun = entity.replace("_", " ")
    if r.nested_in:
        return f"the {r.nested_in} records are {noun} records"
    if r.op.returns == "records":
        return f"its records are {noun} records"
    return f"its record is {_a(entity)} record"


def _a(entity: str) -> str:
    """`a movie`, `an admin division`."""
    noun = entity.replace("_", " ")
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"


def _by_shape(r: _Record, res: Resolution) -> tuple[str, str] | None:
    entity = shape_entity(r.shape)
    return (entity, f"schema {r.shape}") if entity and entity in res.known else None


def _by_path(r: _Record, res: Resolution) -> tuple[str, str] | None:
    shape = res.paths.get(r.op.name)
    if shape is None:
        return None
    last = shape.last_entity_param
    if last is not None and (shape.ends_with_entity_param or r.op.returns == "record"):
        entity = shape.param_entities[last]
        how = "looked up by" if shape.ends_with_entity_param else "an aspect of the one named by"
        return entity, f"{how} {{{last}}} in {r.op.path}"
    for word in reversed(shape.tail_words()):
        entity = match_known(word, res.known)
        if entity:
            return entity, f"/{word} in {r.op.path}"
    return None


def match_known(word: str, known: set[str]) -> str | None:
    """The known entity a path noun names: itself, or the one it ends with (`nearby_city` ->
    city), or the one sharing its last word when only one does (`nearby_division` -> admin_division;
    not a presentation word such as `type`: a `dc_type` is no `damage_type`)."""
    if word in known:
        return word
    ending = [e for e in known if word.endswith("_" + e)]
    if ending:
        return max(ending, key=len)
    last = word.rsplit("_", 1)[-1]
    if last in words().shape_suffixes:
        return None
    sharing = [e for e in known if e.rsplit("_", 1)[-1] == last]
    return sharing[0] if len(sharing) == 1 else None


def _by_url(r: _Record, res: Resolution) -> tuple[str, str] | None:
    """Records whose example shows a URL of a lookup (`"url": "/api/ability-scores/str"` matches
    `/api/ability-scores/{index}`) are of the entity that lookup takes: how a document's generic
    reference records (`APIReference` {index, name, url}) say what they point to."""
    for f in r.fields:
        entity = entity_of_url(f.example, res.paths) if f.type == "str" else None
        if entity:
            return entity, f"the example {f.name} {f.example} is a URL of its lookup"
    return None


def entity_of_url(url: str, shapes: dict[str, PathShape]) -> str | None:
    """The entity a URL looks up: that of the last parameter of the path it instantiates (the
    template with the most literal segments matching the URL's end wins)."""
    if "/" not in url or " " in url:
        return None
    parts = [p for p in urlsplit(url).path.split("/") if p]
    best: tuple[int, str] | None = None
    for shape in shapes.values():
        segments = [s for s in shape.segments if s.text]
        last = shape.last_entity_param
        if not segments or not shape.ends_with_entity_param or len(segments) > len(parts):
            continue
        tail = parts[len(parts) - len(segments):]
        if all(s.param is not None or s.text.lower() == t.lower() for s, t in zip(segments, tail)):
            literals = sum(s.param is None for s in segments)
            if literals and (best is None or literals > best[0]):
                best = (literals, shape.param_entities[last])  # type: ignore[index]
    return best[1] if best else None


def _by_attribute(r: _Record, res: Resolution) -> tuple[str, str] | None:
    """Nested records named after a known entity (a spell's `classes`) are of that entity."""
    entity = match_known(singular(snake(r.nested_in or "")), res.known)
    return (entity, f"the attribute {r.nested_in} names it") if entity else None


def _by_id_field(r: _Record, res: Resolution) -> tuple[str, str] | None:
    """A record without an `id` of its own is about the entity of its `<x>_id` attribute
    (the one its schema name starts with, when several)."""
    if r.has_id:
        return None
    stems = [(s, f.name) for f in r.fields if (s := id_stem(f.name)) and s in res.known]
    if not stems:
        return None
    own = shape_entity(r.shape)
    preferred = next(((s, n) for s, n in stems if own and (s == own or own.startswith(s))), stems[0])
    return preferred[0], f"its identifier {preferred[1]}"


def _similar(records: list[_Record], strong: dict[str, set[str]], res: Resolution) -> None:
    """The rest take the known entity whose records share most of their attributes."""
    w = words()
    for r in records:
        if id(r.fields) in res.record_entity or not r.fields:
            continue
        scored = []
        for entity, names in strong.items():
            shared = len(r.names & names)
            if shared >= w.similar_min and shared / len(r.names) >= w.similar_share:
                scored.append((shared / len(r.names), shared, entity))
        scored.sort(reverse=True)
        if scored and (len(scored) == 1 or scored[0][:2] != scored[1][:2]):
            share, shared, entity = scored[0]
            res.record_entity[id(r.fields)] = entity
            res.note(r.op.name, f"{_about(r, entity)}: {shared} of their "
                                f"{len(r.names)} attributes are those of {entity.replace('_', ' ')} records elsewhere")


def _fallback(records: list[_Record], res: Resolution) -> None:
    """Records nothing above placed are a new entity, named by schema, path or operation."""
    w = words()
    for r in records:
        if id(r.fields) in res.record_entity:
            continue
        entity = shape_entity(r.shape)
        why = f"schema {r.shape}"
        if r.nested_in is not None:
            if entity and r.has_id:
                res.record_entity[id(r.fields)] = entity
                res.note(r.op.name, f"{_about(r, entity)} ({why}), an entity no input identifies")
            continue
        if entity is None:
            shape = res.paths.get(r.op.name)
            nouns = [t for t in (shape.tail_words() if shape else []) if t not in w.list_segments]
            if nouns:
                entity, why = nouns[-1], f"/{nouns[-1]} in {r.op.path}"
            else:
                stems = [s for f in r.fields if (s := id_stem(f.name))]
                entity, why = (stems[0], f"its identifier {stems[0]}_id") if stems and not r.has_id else \
                    (singular(snake(strip_verb(r.op.name))), f"the operation {r.op.name}")
        res.record_entity[id(r.fields)] = entity
        res.note(r.op.name, f"{_about(r, entity)} ({why}), an entity no input identifies")


# ----------------------------------------------------------------------------- keys and links


def _keys(ops: list[OperationDraft], records: list[_Record], res: Resolution) -> None:
    """The key of each entity: the attribute its own records carry its identity in."""
    inputs: dict[str, list[ParamDraft]] = {}
    for op in ops:
        for p in op.params:
            entity = res.param_entity.get((op.name, p.name))
            if entity:
                inputs.setdefault(entity, []).append(p)
    attrs: dict[str, set[str]] = {}
    shown: dict[str, list[tuple[str, str]]] = {}
    for r in records:
        entity = res.record_entity.get(id(r.fields))
        if entity:
            attrs.setdefault(entity, set()).update(r.names)
            shown.setdefault(entity, []).extend((f.name, f.example) for f in r.fields if f.example)
    for entity in sorted(res.known, key=lambda e: (e not in inputs, e)):
        key, why = _key(entity, inputs.get(entity, []), attrs.get(entity, set()))
        described = next((p for p in inputs.get(entity, []) if p.description), None)
        res.registry.see(entity, key, described.description if described else "", why)
        examples = [p.example for p in inputs.get(entity, []) if p.example]
        examples += [v for n, v in shown.get(entity, []) if n == key]
        typed = _typed(key, inputs.get(entity, []), examples)
        if typed:
            res.registry.typed[entity] = typed
            res.entity_notes.append(f"{entity}: typed, {typed}: a lookup by it starts solutions")


def _key(entity: str, params: list[ParamDraft], attrs: set[str]) -> tuple[str, str]:
    names = list(dict.fromkeys(p.name for p in params))
    for name in names:
        if name in attrs:
            return name, f"input {name}, an attribute of its records"
    w = words()
    name_like = any(snake(p.sent_as) in w.name_keys or snake(p.sent_as).endswith(tuple(w.name_keys)) for p in params)
    if "id" in attrs and not (name_like and any(k in attrs for k in w.name_keys)):
        return "id", f"`id` of its records" + (f", which {', '.join(names)} take" if names else "")
    by_snake = {snake(a): a for a in attrs}
    for key in w.name_keys if (name_like or "id" not in attrs) and names else ():
        if key in by_snake:
            found = by_snake[key]
            return found, f"`{found}` of its records" + (f", which {', '.join(names)} take" if names else "") + \
                ("" if name_like else " (they have no `id`)")
    if names:
        return names[0], f"input {names[0]} (no attribute of its records carries it: nothing links to it)"
    stems = sorted(a for a in attrs if id_stem(a) == entity)
    return (stems[0], f"attribute {stems[0]}") if stems else ("", "its records carry no identifier")


def _typed(key: str, params: list[ParamDraft], examples: list[str]) -> str | None:
    """Why a person can type the entity's key, or None: the document lists its values; it is a
    name-like input; it is a code or slug whatever the input is called (words.yaml `keys.typed`:
    GeoDB's `{countryId}` takes a country's `code`, "JP"); or every example the document gives of
    it reads as words or a short code (`Africa__Abidjan`, `fireball`), not as an opaque id
    (`123214`, `P80001571`)."""
    if not params:
        return None
    listed = next((p for p in params if p.enum), None)
    if listed is not None:
        return f"the document lists the values of {listed.sent_as} ({', '.join(listed.enum[:3])}, ...)"
    if key in words().name_keys and any(snake(p.sent_as) in words().name_keys or key == p.name for p in params):
        return f"its key {key} is a name-like text"
    if snake(key) in words().typed_keys:
        return f"its key {key} is a code a person writes"
    if examples and all(readable(e) for e in examples):
        values = ", ".join(sorted(set(examples))[:3])
        return f"the document's examples of its key read as words, not opaque ids ({values})"
    return None


_WORD = re.compile(r"[A-Za-z]+")
_WORDS = re.compile(r"[A-Za-z]+(?:[-_ /.]+[A-Za-z]+)*")


def readable(value: str) -> bool:
    """Whether an example key is words a person could write (`fireball`, `acid-arrow`, `US`,
    `Africa__Abidjan`, `en_US`): letters in words, each lower-case, upper-case or capitalised;
    no digits, so no numeric id (`123214`), no coded one (`P80001571`, `Q60`), no base64."""
    if not _WORDS.fullmatch(value):
        return False
    return all(w.islower() or w.isupper() or (w[0].isupper() and w[1:].islower()) for w in _WORD.findall(value))


def _rename(ops: list[OperationDraft], records: list[_Record], res: Resolution) -> None:
    """Inputs take their entity's key as name when the key is an attribute of the entity's
    records, so the graph couples the two; at most one input per operation takes a name."""
    attrs: dict[str, set[str]] = {}
    for r in records:
        entity = res.record_entity.get(id(r.fields))
        if entity:
            attrs.setdefault(entity, set()).update(r.names)
    for op in ops:
        taken = {p.name for p in op.params}
        for p in op.params:
            entity = res.param_entity.get((op.name, p.name))
            key = res.registry.keys.get(entity or "")
            linked = links(op, p) or filters(op, p)
            if not entity or not key or key == p.name or key not in attrs.get(entity, set()) or not linked:
                continue
            if key in taken:
                res.note(op.name, f"parameter {p.name} keeps its name: {key} is taken by another input")
                continue
            taken.add(key)
            res.spec_names[(op.name, p.name)] = key
            res.note(op.name, f"parameter {p.sent_as} is called {key} in the spec, the key of {entity.replace('_', ' ')} "
                              f"records, so their {key} feeds it; the binding sends it as {p.sent_as}")


def _rename_ids(records: list[_Record], res: Resolution) -> None:
    """A top-level record whose identity is its `id` while its entity's key is another attribute
    takes the key's name in the spec, so it links like the entity's other records; the binding
    renames the answer's field (nested records keep their names: the transport renames only the top)."""
    for r in records:
        entity = res.record_entity.get(id(r.fields))
        key = res.registry.keys.get(entity or "")
        if r.nested_in is not None or not key or key == "id" or "id" not in r.names or key in r.names:
            continue
        res.attribute_names[id(r.fields)] = {"id": key}
        res.note(r.op.name, f"attribute id is called {key} in the spec, the key of {entity.replace('_', ' ')} records "  # type: ignore[union-attr]
                            f"elsewhere, so it links like them; the binding renames the answer's id")


def _unknown_ids(records: list[_Record], res: Resolution) -> None:
    """Say which `<x>_id` attributes were read as plain values (no entity x is taken anywhere)."""
    for r in records:
        for f in r.fields:
            stem = id_stem(f.name)
            if stem and stem not in res.known and f.type != "records":
                res.note(r.op.name, f"attribute {f.name} is a plain value: no operation takes its {stem.replace('_', ' ')}")
