"""(query, solution, code) triplets: the record, and the factory that makes verified ones.

The factory is the inner loop of data generation: sample an entity of the right split, fill a
template, compute the ground truth from the environment, write the code, run it in the sandbox,
and keep the triplet only when the sandbox reproduces the ground truth. It is plain Python; the
Ray pipeline in training/ only decides which unit of work runs where.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from soay.answers import answers_match
from soay.code_builder import build_code
from soay.combinations import Combination, CombinationSet
from soay.environment.base import Environment
from soay.ground_truth import Unanswerable, ground_truth
from soay.splits import entity_split, phrasings_for

CodeProposer = Callable[[str, str], str | None]
"""(query, solution) -> code or None; the optional teacher hook."""


class CombinationRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    inputs: list[str]
    output: str
    kind: str


class Triplet(BaseModel):
    """One training or test example (the DESIGN.md contract)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    domain: str
    query: str
    language: str
    solution: str
    combination: CombinationRef
    code: str
    inputs: dict[str, str]
    answer: Any
    template_id: str
    hops: int
    split: str
    entity_id: str
    code_source: str = "template"


@dataclass(frozen=True)
class WorkUnit:
    """Make `count` triplets of one combination for one split, from one seed."""

    combination_id: str
    split: str
    count: int
    seed: int


@dataclass
class UnitResult:
    triplets: list[Triplet] = field(default_factory=list)
    stats: Counter = field(default_factory=Counter)


class TripletFactory:
    """Makes verified triplets for work units; one per process (it owns a sandbox)."""

    def __init__(
        self,
        env: Environment,
        combinations: CombinationSet,
        run_code: Callable[[str], Any],
        test_fraction: float = 0.1,
        paraphrases: dict[str, dict[str, list[str]]] | None = None,
        propose_code: CodeProposer | None = None,
        max_attempts_per_triplet: int = 8,
    ) -> None:
        self.env = env
        self.combinations = combinations
        self.run_code = run_code
        self.test_fraction = test_fraction
        self.paraphrases = paraphrases or {}
        self.propose_code = propose_code
        self.max_attempts = max_attempts_per_triplet

    def make(self, unit: WorkUnit) -> UnitResult:
        c = self.combinations.by_id[unit.combination_id]
        solution = self.combinations.solution(c)
        head_entity = self.combinations.spec.api(solution.head).entity
        templates = phrasings_for(c, unit.split, self.paraphrases.get(c.id))
        rng = random.Random(f"{unit.seed}/{c.id}/{unit.split}")
        out = UnitResult()
        seen: set[tuple] = set()
        for attempt in range(unit.count * self.max_attempts):
            if len(out.triplets) >= unit.count:
                break
            out.stats["attempts"] += 1
            entity_id = self._sample(head_entity, unit.split, rng)
            if entity_id is None:
                out.stats["no_entity"] += 1
                continue
            language, index, template = templates[len(out.triplets) % len(templates)]
            head_values = self.env.head_inputs(solution.head, entity_id)
            values = {k: head_values[k] for k in c.inputs}
            try:
                answer, values = ground_truth(self.env, c, solution, entity_id, values, rng)
            except Unanswerable:
                out.stats["unanswerable"] += 1
                continue
            key = (entity_id, tuple(sorted(values.items())))
            if key in seen:
                out.stats["duplicate"] += 1
                continue
            query = template.format(**values)
            verified = self._verified_code(c, query, values, answer, out.stats)
            if verified is None:
                continue
            seen.add(key)
            code, source = verified
            out.triplets.append(
                Triplet(
                    id=_triplet_id(self.combinations.spec.domain, c.id, query),
                    domain=self.combinations.spec.domain,
                    query=query,
                    language=language,
                    solution=str(solution),
                    combination=CombinationRef(id=c.id, inputs=list(c.inputs), output=c.output, kind=c.kind),
                    code=code,
                    inputs=values,
                    answer=answer,
                    template_id=c.template_id(language, index),
                    hops=c.hops,
                    split=unit.split,
                    entity_id=entity_id,
                    code_source=source,
                )
            )
        out.stats["kept"] = len(out.triplets)
        return out

    def _sample(self, entity: str, split: str, rng: random.Random) -> str | None:
        for _ in range(200):
            entity_id = self.env.sample_entity(entity, rng)
            if entity_split(entity_id, self.test_fraction) == split:
                return entity_id
        return None

    def _verified_code(
        self, c: Combination, query: str, values: dict[str, str], answer: Any, stats: Counter
    ) -> tuple[str, str] | None:
        """The first candidate code (teacher's, then the template's) whose result is the answer."""
        solution = self.combinations.solution(c)
        candidates = [("template", build_code(self.combinations.spec, c, solution, values))]
        if self.propose_code is not None:
            proposed = self.propose_code(query, str(solution))
            if proposed:
                candidates.insert(0, ("teacher", proposed))
        for source, code in candidates:
            result = self.run_code(code)
            if not result.ok:
                stats[f"{source}_exec_error"] += 1
            elif not answers_match(answer, result.result):
                stats[f"{source}_mismatch"] += 1
            else:
                stats[f"{source}_verified"] += 1
                return code, source
        return None


def _triplet_id(domain: str, combination_id: str, query: str) -> str:
    return hashlib.blake2b(f"{domain}\x00{combination_id}\x00{query}".encode(), digest_size=8).hexdigest()
