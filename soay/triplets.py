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
    start: int = 0
    """Where the unit's first triplet falls among its combination's triplets of the split: the
    phrasing it starts at, so that consecutive units tile the phrasings instead of each taking the
    first ones."""


@dataclass
class UnitResult:
    triplets: list[Triplet] = field(default_factory=list)
    stats: Counter = field(default_factory=Counter)


@dataclass
class _Candidate:
    """An instantiated query with its ground truth, waiting for its code to be verified."""

    entity_id: str
    values: dict[str, str]
    answer: Any
    query: str
    language: str
    template_index: int
    codes: list[tuple[str, str]]
    """(source, code) to try in order: the teacher's proposal first, then the template's."""


class TripletFactory:
    """Makes verified triplets for work units; one per process (it owns a sandbox).

    `run_batch` runs a list of snippets in the sandbox and returns one result each (with
    `.ok` and `.result`); candidates are verified a batch at a time because starting a
    sandboxed child per snippet would cost more than everything else together.
    """

    def __init__(
        self,
        env: Environment,
        combinations: CombinationSet,
        run_batch: Callable[[list[str]], list[Any]],
        test_fraction: float = 0.1,
        validation_fraction: float = 0.0,
        paraphrases: dict[str, dict[str, list[str]]] | None = None,
        propose_code: CodeProposer | None = None,
        max_attempts_per_triplet: int = 8,
    ) -> None:
        self.env = env
        self.combinations = combinations
        self.run_batch = run_batch
        self.test_fraction = test_fraction
        self.validation_fraction = validation_fraction
        self.paraphrases = paraphrases or {}
        self.propose_code = propose_code
        self.max_attempts = max_attempts_per_triplet

    def make(self, unit: WorkUnit) -> UnitResult:
        c = self.combinations.by_id[unit.combination_id]
        solution = self.combinations.solution(c)
        templates = phrasings_for(c, unit.split, self.paraphrases.get(c.id))
        rng = random.Random(f"{unit.seed}/{c.id}/{unit.split}")
        out = UnitResult()
        seen: set[tuple] = set()
        budget = unit.count * self.max_attempts
        turn = unit.start
        while len(out.triplets) < unit.count and out.stats["attempts"] < budget:
            batch: list[_Candidate] = []
            while len(batch) < unit.count - len(out.triplets) and out.stats["attempts"] < budget:
                candidate = self._candidate(c, unit.split, templates[turn % len(templates)], rng, seen, out.stats)
                if candidate is not None:
                    batch.append(candidate)
                    turn += 1
            for candidate, verified in zip(batch, self._verify(batch, out.stats)):
                if verified is None:
                    continue
                source, code = verified
                out.triplets.append(
                    Triplet(
                        id=_triplet_id(self.combinations.spec.domain, c.id, candidate.query),
                        domain=self.combinations.spec.domain,
                        query=candidate.query,
                        language=candidate.language,
                        solution=str(solution),
                        combination=CombinationRef(id=c.id, inputs=list(c.inputs), output=c.output, kind=c.kind),
                        code=code,
                        inputs=candidate.values,
                        answer=candidate.answer,
                        template_id=c.template_id(candidate.language, candidate.template_index),
                        hops=c.hops,
                        split=unit.split,
                        entity_id=candidate.entity_id,
                        code_source=source,
                    )
                )
        out.stats["kept"] = len(out.triplets)
        return out

    def _candidate(
        self, c: Combination, split: str, template: tuple[str, int, str], rng: random.Random, seen: set[tuple], stats: Counter
    ) -> _Candidate | None:
        """One instantiated query with its answer and code to try, or None (counted in stats)."""
        stats["attempts"] += 1
        solution = self.combinations.solution(c)
        entity_id = self._sample(self.combinations.spec.api(solution.head).entity, split, rng)
        if entity_id is None:
            stats["no_entity"] += 1
            return None
        head_values = self.env.head_inputs(solution.head, entity_id)
        try:
            answer, values = ground_truth(self.env, c, solution, entity_id, {k: head_values[k] for k in c.inputs}, rng)
        except Unanswerable:
            stats["unanswerable"] += 1
            return None
        key = (entity_id, tuple(sorted(values.items())))
        if key in seen:
            stats["duplicate"] += 1
            return None
        seen.add(key)
        language, index, text = template
        query = text.format(**values)
        codes = [("template", build_code(self.combinations.spec, c, solution, values))]
        if self.propose_code is not None and (proposed := self.propose_code(query, str(solution))):
            codes.insert(0, ("teacher", proposed))
        return _Candidate(entity_id, values, answer, query, language, index, codes)

    def _sample(self, entity: str, split: str, rng: random.Random) -> str | None:
        """A random entity of `split` (rejection sampling on the stable split hash)."""
        for _ in range(200):
            entity_id = self.env.sample_entity(entity, rng)
            if entity_split(entity_id, self.test_fraction, self.validation_fraction) == split:
                return entity_id
        return None

    def _verify(self, batch: list[_Candidate], stats: Counter) -> list[tuple[str, str] | None]:
        """For each candidate, the first (source, code) whose sandboxed result is its answer."""
        verified: list[tuple[str, str] | None] = [None] * len(batch)
        pending = list(range(len(batch)))
        attempt = 0
        while pending:
            tries = [(i, batch[i].codes[attempt]) for i in pending if attempt < len(batch[i].codes)]
            if not tries:
                break
            results = self.run_batch([code for _, (_, code) in tries])
            pending = []
            for (i, (source, code)), result in zip(tries, results):
                if not result.ok:
                    stats[f"{source}_exec_error"] += 1
                elif not answers_match(batch[i].answer, result.result):
                    stats[f"{source}_mismatch"] += 1
                else:
                    stats[f"{source}_verified"] += 1
                    verified[i] = (source, code)
                    continue
                pending.append(i)
            attempt += 1
        return verified


def _triplet_id(domain: str, combination_id: str, query: str) -> str:
    return hashlib.blake2b(f"{domain}\x00{combination_id}\x00{query}".encode(), digest_size=8).hexdigest()
