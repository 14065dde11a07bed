"""The API graph G of SoAy Definition 1.

An edge f_n -> f_m exists when an attribute returned by f_n is an input parameter of f_m
(a_{n,m} = i_m ∩ o_n ≠ ∅). Only entity references couple APIs: a free-text parameter such as a
name is what a person types, and handing a returned name to a fuzzy search is a new search, not a
coupling — which is what makes the search APIs the heads of zero in-degree.

An optional reference is a filter (`/schedules/schedule_a/?committee_id=`: the receipts of one
committee): it couples from the records of its entity (a committee found before), as a hop that
narrows the list, but the list can be called without it, so it does not count against the list
starting a solution by itself. Optional references of a lookup that requires nothing and returns
one record (`person(id, personID)`: either identifies the person) are its keys and count.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from soay.spec import Api, ApiSpec, Attribute


@dataclass(frozen=True)
class Coupling:
    """One edge of the graph: which attribute of `src` feeds which parameter of `dst`.

    `path` is the attribute's place in the returned value: `("person_id",)` at the top level,
    `("authors", "person_id")` inside the nested `authors` records. `relation` is set when the
    coupling goes through nested records (those records describe a related entity, e.g. the
    authors of a publication).
    """

    src: str
    dst: str
    param: str
    path: tuple[str, ...]
    relation: str | None = None

    @property
    def nested(self) -> str | None:
        """The nested records attribute the coupling goes through, if any."""
        return self.path[0] if len(self.path) > 1 else None


class ApiGraph:
    """Directed graph of API couplings built from a spec."""

    def __init__(self, spec: ApiSpec) -> None:
        self.spec = spec
        self.edges: dict[str, list[Coupling]] = {a.name: [] for a in spec.apis}
        for src in spec.apis:
            for dst in spec.apis:
                self.edges[src.name].extend(_couplings(src, dst))

    def successors(self, api: str) -> list[Coupling]:
        return self.edges[api]

    def coupling(self, src: str, dst: str) -> Coupling:
        """The coupling used to go from `src` to `dst` (the first declared when several exist)."""
        for c in self.edges[src]:
            if c.dst == dst:
                return c
        raise KeyError(f"no coupling {src} -> {dst} in the API graph")

    @cached_property
    def in_degree(self) -> dict[str, int]:
        """Edges from other APIs only: a lookup whose records feed its own input (a pet lookup
        returning pets with their ids) is still where a solution can start. Edges into a filter
        do not count: the list is called without one too."""
        deg = {name: 0 for name in self.edges}
        for src, cs in self.edges.items():
            for dst in {c.dst for c in cs if needed(self.spec.api(c.dst), c.param)} - {src}:
                deg[dst] += 1
        return deg

    @property
    def heads(self) -> list[str]:
        """APIs of zero in-degree, and lookups by a key a person types (an entity marked
        `typed`): the only valid first steps of a solution."""
        return [name for name, d in self.in_degree.items() if d == 0 or self._typed_lookup(self.spec.api(name))]

    def _typed_lookup(self, api: Api) -> bool:
        """Every identifier it requires is a typed key, and it requires one at least. What else it
        requires is a plain value no API feeds (a class's level: "level 5 of the wizard")."""
        keys = [p for p in api.params if p.required and p.ref]
        return bool(keys) and all(self.spec.entities[p.ref].typed for p in keys)

    def to_dict(self) -> dict[str, list[dict[str, object]]]:
        return {
            src: [{"dst": c.dst, "attribute": ".".join(c.path), "relation": c.relation} for c in cs]
            for src, cs in self.edges.items()
        }


def needed(api: Api, param: str) -> bool:
    """Whether `api` needs a value of `param` to be called: a required input, or one of the
    optional keys of a lookup that requires nothing and returns one record. Other optional
    references are filters."""
    return api.param(param).required or (api.returns == "record" and not any(p.required for p in api.params))


def _couplings(src: Api, dst: Api) -> list[Coupling]:
    out: list[Coupling] = []
    for param in dst.params:
        if param.ref is None:
            continue
        # a filter takes the id of the entity found before (its own records), not of any record
        # that mentions one: else every list filtered by committee follows every receipt
        own_only = not needed(dst, param.name)
        for path, relation in _ref_paths(src.attributes):
            if own_only and (len(path) > 1 or src.entity != param.ref):
                continue
            if path[-1] == param.name and _ref_of(src, path) == param.ref:
                out.append(Coupling(src.name, dst.name, param.name, path, relation))
    return out


def _ref_paths(attributes: tuple[Attribute, ...]) -> list[tuple[tuple[str, ...], str | None]]:
    paths: list[tuple[tuple[str, ...], str | None]] = []
    for a in attributes:
        if a.ref:
            paths.append(((a.name,), None))
        for sub in a.attributes:
            if sub.ref:
                paths.append(((a.name, sub.name), a.relation))
    return paths


def _ref_of(api: Api, path: tuple[str, ...]) -> str | None:
    attr = api.attribute(path[0])
    for name in path[1:]:
        attr = next(a for a in attr.attributes if a.name == name)
    return attr.ref
