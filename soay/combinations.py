"""Combinations C = (head input, solution, tail output) of SoAy §4.1, with their query templates.

A combination pins a solution to one intent: which head parameters the question gives, which
attribute it asks for, and — for the branch and loop kinds — how the result is walked (take the
first item, loop over every item, keep the best by some attribute, keep those matching a
condition). The same object drives the code builder and the ground-truth oracle, so a template
written in YAML is enough to make verified training data for any domain.

Combinations live in `soay/intents/<domain>.yaml` and are checked against the solution library
when loaded: an unknown solution, attribute or placeholder, or an intent that a shorter solution
already answers (the concise rule at the level of combinations), is an error.

A question may give a search more than the name it asks about: a scholar's organisation, a research
field. A combination's `filters` are the head parameters its phrasings may give or leave out, so
"Citation count of Wei Zhang", "... of Wei Zhang at Tsinghua University" and "... of Wei Zhang, who
works on graph neural networks" are phrasings of one combination, and each question's program
searches with exactly the filters it gives (`Combination.given`). Its held-out phrasings (the last
two of each language, soay/splits.py) give exactly its `inputs`, so the evaluation splits ask what
they always asked.
"""

from __future__ import annotations

import string
from functools import cached_property
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from soay.solutions import Solution, SolutionLibrary
from soay.spec import ApiSpec

INTENT_DIR = Path(__file__).parent / "intents"
LANGUAGES = ("en", "zh")

Pick = Literal["first", "last", "each"]
Op = Literal["value", "first", "list", "count", "max", "min", "filter", "flatten"]


class Where(BaseModel):
    """Branch condition: keep items whose `attr` contains a value.

    The value is either fixed (`literal`, e.g. the relation "advisor") or comes from the question
    (`contains` names its placeholder, e.g. a research field).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    attr: str
    contains: str | None = None
    literal: str | None = None

    @model_validator(mode="after")
    def _check(self) -> Where:
        if (self.contains is None) == (self.literal is None):
            raise ValueError("a condition takes exactly one of `contains` (a placeholder) or `literal`")
        return self

    def value(self, values: dict[str, str]) -> str:
        return self.literal if self.literal is not None else values[self.contains]


class Answer(BaseModel):
    """How the final result is read off the last API's output.

    value: one attribute of a record; first/list/count: of a list; max/min: the item with the
    largest/smallest `by`; filter: items matching `where`; flatten: the union over a loop.
    `source` says whether the reported attribute comes from the tail API's result or, in a loop,
    from the item being looped over (e.g. the co-author's name, not the interest matched).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    op: Op = "value"
    attr: str | None = None
    by: str | None = None
    where: Where | None = None
    source: Literal["tail", "item"] = "tail"

    @model_validator(mode="after")
    def _check(self) -> Answer:
        if self.op in ("max", "min") and not self.by:
            raise ValueError(f"answer op {self.op!r} needs `by`")
        if self.op == "filter" and not self.where:
            raise ValueError("answer op 'filter' needs `where`")
        if self.op != "count" and not self.attr and self.op not in ("list", "first"):
            raise ValueError(f"answer op {self.op!r} needs `attr`")
        return self


class Combination(BaseModel):
    """One intent over one solution, with its phrasings per language."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    solution: str
    inputs: tuple[str, ...]
    """The head parameters its held-out phrasings give (the first names what is asked about)."""
    filters: tuple[str, ...] = ()
    """Head parameters that narrow the search (an organisation, a research interest) and that a
    phrasing may give or leave out; every other input and branch value a phrasing must give."""
    group: bool = False
    """The question asks about what the head search finds as a whole (the scholars at an
    organisation), not about one entity it names: its answer is read off the search's results."""
    pick: dict[int, Pick] = Field(default_factory=dict)
    answer: Answer
    phrasings: dict[str, tuple[str, ...]]
    informal: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """Training-only phrasings the way people type (soay/intents/<domain>.informal.yaml): never
    held out, so the evaluation splits are the same with or without them."""

    @cached_property
    def apis(self) -> tuple[str, ...]:
        return tuple(p.strip() for p in self.solution.split("->"))

    @property
    def hops(self) -> int:
        return len(self.apis)

    @property
    def loop_hop(self) -> int | None:
        """The hop whose list is looped over, if this is a loop combination."""
        each = [i for i, p in self.pick.items() if p == "each"]
        return each[0] if each else None

    @property
    def kind(self) -> str:
        """lookup, branch (a condition on the result) or loop (a call per item)."""
        if self.loop_hop is not None:
            return "loop"
        return "branch" if self.answer.op in ("filter", "max", "min") else "lookup"

    @property
    def branch_placeholders(self) -> set[str]:
        """Placeholders that are no head input: the value a condition compares with."""
        where = self.answer.where
        return {where.contains} if where and where.contains else set()

    @property
    def placeholders(self) -> set[str]:
        """The placeholders of its held-out phrasings: the inputs and any branch value."""
        return set(self.inputs) | self.branch_placeholders

    @property
    def head_inputs(self) -> tuple[str, ...]:
        """Every head parameter a phrasing may give: the inputs, then the other filters."""
        return self.inputs + tuple(f for f in self.filters if f not in self.inputs)

    @property
    def required_placeholders(self) -> set[str]:
        """What every phrasing gives: the inputs that are no filter, and any branch value."""
        return (set(self.inputs) - set(self.filters)) | self.branch_placeholders

    @property
    def accepted_placeholders(self) -> set[str]:
        """What a phrasing may give: every head input and any branch value."""
        return set(self.head_inputs) | self.branch_placeholders

    def given(self, template: str) -> tuple[str, ...]:
        """The head inputs a phrasing gives, in `head_inputs` order: what its program searches with."""
        used = template_placeholders(template)
        return tuple(k for k in self.head_inputs if k in used)

    @property
    def output(self) -> str:
        return self.answer.attr or self.answer.op

    def templates(self, language: str) -> tuple[str, ...]:
        return self.phrasings.get(language, ())

    def template_id(self, language: str, index: int) -> str:
        return f"{self.id}/{language}/{index}"


def template_placeholders(template: str) -> set[str]:
    """The placeholders a template writes (`{name}` ...)."""
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


class CombinationSet:
    """All combinations of a domain, validated against its solution library."""

    def __init__(self, spec: ApiSpec, combinations: list[Combination], library: SolutionLibrary) -> None:
        self.spec = spec
        self.library = library
        self.combinations = combinations
        ids = [c.id for c in combinations]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate combination ids in {spec.domain}")
        for c in combinations:
            _validate(c, spec, library)

    def __iter__(self):
        return iter(self.combinations)

    def __len__(self) -> int:
        return len(self.combinations)

    @cached_property
    def by_id(self) -> dict[str, Combination]:
        return {c.id: c for c in self.combinations}

    def solution(self, combination: Combination) -> Solution:
        return self.library.get(combination.apis)

    @property
    def solutions_used(self) -> set[str]:
        return {c.solution for c in self.combinations}


def load_combinations(spec: ApiSpec, library: SolutionLibrary, path: Path | None = None) -> CombinationSet:
    """Load `soay/intents/<domain>.yaml` (or `path`) and validate it, with the informal
    training phrasings of its `.informal.yaml` sidecar when there is one."""
    path = path or INTENT_DIR / f"{spec.domain}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"no intents file for domain {spec.domain!r} at {path}")
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if raw.get("domain") != spec.domain:
        raise ValueError(f"{path} is for domain {raw.get('domain')!r}, not {spec.domain!r}")
    informal = _load_informal(path.with_suffix(".informal.yaml"), {c["id"] for c in raw["combinations"]})
    return CombinationSet(spec, [Combination.model_validate({**c, "informal": informal.get(c["id"], {})}) for c in raw["combinations"]], library)


def _load_informal(path: Path, ids: set[str]) -> dict[str, dict[str, list[str]]]:
    """{combination id: {language: [phrasing, ...]}} from an informal sidecar, or {} without one."""
    if not path.is_file():
        return {}
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if unknown := set(raw) - ids:
        raise ValueError(f"{path}: no combination {', '.join(sorted(unknown))}")
    return raw


def _validate(c: Combination, spec: ApiSpec, library: SolutionLibrary) -> None:
    where = f"combination {c.id!r}"
    if c.apis not in library:
        raise ValueError(f"{where}: {c.solution!r} is not in the solution library")
    solution = library.get(c.apis)
    head = spec.api(solution.head)
    unknown = (set(c.inputs) | set(c.filters)) - {p.name for p in head.params}
    if unknown:
        raise ValueError(f"{where}: {head.name} has no parameter {', '.join(sorted(unknown))}")
    if not c.inputs:
        raise ValueError(f"{where}: needs at least one head input")
    if not set(c.inputs) - set(c.filters):
        raise ValueError(f"{where}: every input is a filter; a phrasing must give at least one of them for sure")
    if c.branch_placeholders & set(c.head_inputs):
        raise ValueError(f"{where}: a branch value cannot also be a head input")
    for hop, pick in c.pick.items():
        if not 0 <= hop < c.hops - 1:
            raise ValueError(f"{where}: pick hop {hop} out of range (a pick chooses what feeds the next API)")
    if sum(p == "each" for p in c.pick.values()) > 1:
        raise ValueError(f"{where}: at most one loop per combination")
    if c.loop_hop is not None:
        if c.answer.op not in ("max", "min", "filter", "flatten", "list"):
            raise ValueError(f"{where}: op {c.answer.op!r} is not defined for a loop")
        if any(p != "first" for h, p in c.pick.items() if h > c.loop_hop):
            raise ValueError(f"{where}: hops after a loop take their first item")
    _validate_answer(c, spec, solution, where)
    for lang, templates in [*c.phrasings.items(), *c.informal.items()]:
        if lang not in LANGUAGES:
            raise ValueError(f"{where}: unsupported language {lang!r}")
        for t in templates:
            used = template_placeholders(t)
            if not c.required_placeholders <= used <= c.accepted_placeholders:
                expected = sorted(c.required_placeholders) + [f"[{f}]" for f in sorted(c.accepted_placeholders - c.required_placeholders)]
                raise ValueError(f"{where}: template {t!r} uses {sorted(used)}, expected {expected}")
    for lang, templates in c.phrasings.items():
        held = templates[-2:] if len(templates) > 2 else templates[-1:] if len(templates) > 1 else ()
        for t in held:  # the evaluation splits' own phrasings (soay/splits.py held_out_for)
            if template_placeholders(t) != c.placeholders:
                raise ValueError(f"{where}: held-out phrasing {t!r} uses {sorted(template_placeholders(t))}, "
                                 f"expected exactly {sorted(c.placeholders)} (write phrasings with other filters before it)")
    if len(c.templates("en")) < 2 or not c.templates("zh"):
        raise ValueError(f"{where}: needs at least two English phrasings and one Chinese phrasing")
    if c.loop_hop is None:
        needed = {a for a in (c.answer.attr, c.answer.by) if a} | ({c.answer.where.attr} if c.answer.where else set())
        if c.answer.op not in ("count", "list", "first") and (
            shorter := library.shorter_equivalent(solution, needed)
        ):
            raise ValueError(f"{where}: not concise, {shorter} already answers it")


def _validate_answer(c: Combination, spec: ApiSpec, solution: Solution, where: str) -> None:
    tail = spec.api(solution.tail)
    a = c.answer
    tail_attrs = set(tail.attribute_names)
    item_attrs: set[str] = set()
    if c.loop_hop is not None:
        looped = spec.api(solution.apis[c.loop_hop])
        nested = solution.couplings[c.loop_hop].nested
        item_attrs = {a.name for a in looped.attribute(nested).attributes} if nested else set(looped.attribute_names)
    if a.source == "item" and c.loop_hop is None:
        raise ValueError(f"{where}: answer source 'item' needs a loop")
    reported = item_attrs if a.source == "item" else tail_attrs
    if a.attr and a.attr not in reported:
        raise ValueError(f"{where}: answer attribute {a.attr!r} is not returned there")
    for attr in filter(None, (a.by, a.where.attr if a.where else None)):
        if attr not in tail_attrs:
            raise ValueError(f"{where}: {attr!r} is not returned by {tail.name}")
    if a.op == "value" and tail.returns != "record" and c.loop_hop is None:
        raise ValueError(f"{where}: op 'value' needs {tail.name} to return a record")
    if a.op == "flatten" and c.loop_hop is None:
        raise ValueError(f"{where}: op 'flatten' needs a loop")
