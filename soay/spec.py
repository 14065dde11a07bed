"""Declarative API library specs (the L_A of SoAy), loaded from YAML and validated.

A spec is data so that a new domain is a new YAML file plus an environment, never new pipeline
code: the API graph, the solution library, the code builder, the HTTP clone and the prompts all
read from it.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

SPEC_DIR = Path(__file__).parent / "specs"

ScalarType = Literal["str", "int", "float", "bool", "list[str]"]


class Param(BaseModel):
    """An input parameter of an API."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    type: str
    required: bool = False
    description: str = ""

    @property
    def ref(self) -> str | None:
        """The entity this parameter identifies, when it is a reference."""
        return self.type.removeprefix("ref:") if self.type.startswith("ref:") else None


class Attribute(BaseModel):
    """A returned attribute; `records`-typed attributes nest a list of sub-records."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    type: str
    description: str = ""
    relation: str | None = None
    attributes: tuple[Attribute, ...] = ()

    @property
    def ref(self) -> str | None:
        return self.type.removeprefix("ref:") if self.type.startswith("ref:") else None


class Entity(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    label: str
    typed: bool = False
    """Its key is text a person types (a slug such as `fireball`, a user name), so a lookup by
    it can start a solution even though other APIs return the key too (soay/graph.py heads)."""


class Api(BaseModel):
    """One API: what it takes, what it gives back, and how its result relates to its input."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: Literal["fuzzy", "exact"]
    description: str
    params: tuple[Param, ...]
    returns: Literal["record", "records", "values"]
    entity: str
    relation: str
    attributes: tuple[Attribute, ...]

    @model_validator(mode="after")
    def _check(self) -> Api:
        if self.returns == "values" and len(self.attributes) != 1:
            raise ValueError(f"{self.name}: a `values` API names exactly one attribute")
        return self

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"{self.name} has no parameter {name!r}")

    def attribute(self, name: str) -> Attribute:
        for a in self.attributes:
            if a.name == name:
                return a
        raise KeyError(f"{self.name} returns no attribute {name!r}")

    @property
    def attribute_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    def signature(self) -> str:
        """The call signature shown to models and people: `searchPerson(name, organization, interest)`."""
        return f"{self.name}({', '.join(p.name for p in self.params)})"


class ApiSpec(BaseModel):
    """A whole API library of one domain."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    domain: str
    description: str
    entities: dict[str, Entity]
    apis: tuple[Api, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> ApiSpec:
        names = [a.name for a in self.apis]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate API names in spec {self.domain!r}")
        for api in self.apis:
            refs = [p.ref for p in api.params] + [a.ref for a in _walk(api.attributes)]
            for ref in filter(None, refs):
                if ref not in self.entities:
                    raise ValueError(f"{api.name}: unknown entity reference {ref!r}")
            if api.entity not in self.entities:
                raise ValueError(f"{api.name}: unknown entity {api.entity!r}")
        return self

    @cached_property
    def by_name(self) -> dict[str, Api]:
        return {a.name: a for a in self.apis}

    def api(self, name: str) -> Api:
        try:
            return self.by_name[name]
        except KeyError:
            raise KeyError(f"no API {name!r} in spec {self.domain!r}") from None

    @property
    def api_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.apis)


def _walk(attributes: tuple[Attribute, ...]) -> list[Attribute]:
    out: list[Attribute] = []
    for a in attributes:
        out.append(a)
        out.extend(_walk(a.attributes))
    return out


def load_spec(name_or_path: str | Path) -> ApiSpec:
    """Load a spec by domain name (a YAML file shipped in `soay/specs`) or by path."""
    path = Path(name_or_path)
    if not path.suffix:
        path = SPEC_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in SPEC_DIR.glob("*.yaml")))
        raise FileNotFoundError(f"no API spec {str(name_or_path)!r} (shipped specs: {known})")
    return ApiSpec.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
