"""(query, solution, code) triplets: the record, and the factory that makes verified ones.

The factory is the inner loop of data generation: sample an entity of the right split, fill a
template, compute the ground truth from the environment, write the code, run it in the sandbox,
and keep the triplet only when the sandbox reproduces the ground truth. It is plain Python; the
Ray pipeline in training/ only decides which unit of work runs where.

A small share of the questions (`clarification_share`) are ones the served answer must meet with
a clarification rather than a value (soay/clarifications.py, by soay/outcomes.py's rule): a name
several entities carry, asked about without the organisation that would tell them apart, or a
name nobody carries. Their ground truth is that clarification, and the run verifies them when
its call trace gives the same outcome.

Each phrasing gives the head search what it gives: the name alone, or with the organisation, the
research field or both (a combination's `filters`). A candidate takes the entity's values of
exactly those, and its ground truth and program use them and nothing else. A `group` combination
(the scholars at an organisation) asks about the search's results, not one entity: its question is
filed under the first scholar the search finds, whose split it takes (an organisation asked about
in test is asked about in test only), and it makes no clarification question.
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
from soay.clarifications import (
    AMBIGUOUS, NOT_FOUND, ambiguous_among, ambiguous_answer, clarification_matches, fabricate, is_clarification, namesakes,
    not_found_answer, unqualified,
)
from soay.code_builder import build_code
from soay.combinations import Combination, CombinationSet
from soay.environment.base import Environment
from soay.ground_truth import Unanswerable, ground_truth
from soay.outcomes import analyse, fuzzy_apis
from soay.solutions import Solution
from soay.splits import entity_split, group_split, phrasings_for

CodeProposer = Callable[[str, str], str | None]
"""(query, solution) -> code or None; the optional teacher hook."""

CLARIFICATION_SHARE = 0.05
"""About one candidate in 20 of a combination whose head is a search is a clarification question."""
AMBIGUOUS_SEARCHES = 100
"""Entities of the split whose name is searched, at most, to find one that others carry too."""
NAMESAKE_GIVE_UP = 400
"""Searches of a head API without a single shared name, after which its names count as unique."""
FABRICATION_TRIES = 8
GROUP_TRIES = 200
"""Entities drawn, at most, to find a group (organisation, field) whose search puts a scholar of
the split first."""


class CombinationRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    inputs: list[str]
    output: str
    kind: str


class Triplet(BaseModel):
    """One training or test example (the contract between the triplet factory, training and evaluation).

    `answer` is what the question's code must compute: a plain JSON value (a name, a list, a
    count...), or, for a question the served answer must meet with a clarification, an object
    (soay/clarifications.py; test with `is_clarification`):

    * `{"kind": "ambiguous", "api", "searched", "args", "candidates"}`: the searched name is
      carried by several entities that the question's other words (no organisation, or one they
      share) do not tell apart; `candidates` are their ids (`person_id`), sorted. `inputs` hold
      only the words the question gives (no organisation when it leaves it out). Its split is the most held-out of its
      candidates' (soay.splits.group_split: a training one names training entities only), and
      `entity_id` is its first candidate of that split.
    * `{"kind": "not_found", "api", "searched", "args"}`: the searched name matches nobody; `args`
      is the search call the code makes, `entity_id` the entity whose other inputs (organisation,
      interest) the question borrows.

    A clarification triplet is right when the run's outcome (soay.outcomes.analyse on its call
    trace) has the same kind, the same search API and searched text, and the same candidate ids;
    its code still walks the whole solution (for the namesake a person then picks).
    """

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
    split: str = ""
    head_args: dict[str, str] = field(default_factory=dict)
    """The arguments the code gives the head (search) API."""

    @property
    def clarification(self) -> bool:
        return is_clarification(self.answer)


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
        clarification_share: float = CLARIFICATION_SHARE,
    ) -> None:
        """`clarification_share`: the share of candidates of a combination whose head is a search
        that are made as clarification questions (half ambiguous, half not found, as the corpus
        allows); 0 makes none on purpose (a question the run finds ambiguous is still kept only
        as its clarification)."""
        self.env = env
        self.combinations = combinations
        self.run_batch = run_batch
        self.test_fraction = test_fraction
        self.validation_fraction = validation_fraction
        self.paraphrases = paraphrases or {}
        self.propose_code = propose_code
        self.max_attempts = max_attempts_per_triplet
        self.clarification_share = clarification_share
        self.fuzzy = set(fuzzy_apis(combinations.spec))
        self._namesake_searches: Counter = Counter()
        self._namesake_hits: Counter = Counter()

    def make(self, unit: WorkUnit) -> UnitResult:
        c = self.combinations.by_id[unit.combination_id]
        solution = self.combinations.solution(c)
        templates = phrasings_for(c, unit.split, self.paraphrases.get(c.id))
        rng = random.Random(f"{unit.seed}/{c.id}/{unit.split}")
        # clarifications draw from a stream of their own: the ordinary candidates stay those of share 0
        clarify = random.Random(f"{unit.seed}/{c.id}/{unit.split}/clarification")
        searches = self.combinations.spec.api(solution.head).kind == "fuzzy" and not c.group
        out = UnitResult()
        seen: set[tuple] = set()
        budget = unit.count * self.max_attempts
        turn = unit.start
        while len(out.triplets) < unit.count and out.stats["attempts"] < budget:
            batch: list[_Candidate] = []
            while len(batch) < unit.count - len(out.triplets) and out.stats["attempts"] < budget:
                if searches and self.clarification_share > 0 and clarify.random() < self.clarification_share:
                    candidate = self._clarification(c, solution, unit.split, templates, turn, clarify, seen, out.stats)
                else:
                    candidate = self._candidate(c, unit.split, templates[turn % len(templates)], rng, seen, out.stats)
                if candidate is not None:
                    batch.append(candidate)
                    turn += 1
            for candidate, verified in zip(batch, self._verify(batch, out.stats, c)):
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
        language, index, text = template
        given = c.given(text)  # the head inputs this phrasing gives: the program searches with these
        entity = self.combinations.spec.api(solution.head).entity
        if c.group:
            entity_id, head_values = self._group(solution.head, entity, given, split, rng)
        else:
            entity_id = self._sample(entity, split, rng)
            head_values = self.env.head_inputs(solution.head, entity_id) if entity_id is not None else {}
        if entity_id is None:
            stats["no_entity"] += 1
            return None
        try:
            answer, values = ground_truth(self.env, c, solution, entity_id, {k: head_values[k] for k in given}, rng)
        except Unanswerable:
            stats["unanswerable"] += 1
            return None
        key = (entity_id, tuple(sorted(values.items())))
        if key in seen:
            stats["duplicate"] += 1
            return None
        seen.add(key)
        query = text.format(**values)
        codes = [("template", build_code(self.combinations.spec, c, solution, values))]
        if self.propose_code is not None and (proposed := self.propose_code(query, str(solution))):
            codes.insert(0, ("teacher", proposed))
        return _Candidate(entity_id, values, answer, query, language, index, codes, split, {k: values[k] for k in given})

    def _group(self, head: str, entity: str, given: tuple[str, ...], split: str, rng: random.Random) -> tuple[str | None, dict[str, str]]:
        """(entity, its head inputs) for a group question: a random entity's values of the `given`
        head inputs (its organisation, its field), searched; the question is filed under the first
        scholar the search finds (as soay/log_triplets.py files a logged one-hop program), and
        belongs to that scholar's split. The search decides it, so an organisation asked about in
        test is never asked about in training."""
        key = self.combinations.spec.entities[entity].key
        for _ in range(GROUP_TRIES):
            values = self.env.head_inputs(head, self.env.sample_entity(entity, rng))
            found = self.env.call(head, **{k: values[k] for k in given})
            first = found[0].get(key) if found and isinstance(found[0], dict) else None
            if first is not None and entity_split(str(first), self.test_fraction, self.validation_fraction) == split:
                return str(first), values
        return None, {}

    # --- clarification questions ------------------------------------------------------------------

    def _clarification(
        self, c: Combination, solution: Solution, split: str, templates: list[tuple[str, int, str]], turn: int,
        rng: random.Random, seen: set[tuple], stats: Counter,
    ) -> _Candidate | None:
        """An ambiguous or a not-found question (half each, the other when one cannot be made)."""
        stats["attempts"] += 1
        stats["clarification_attempts"] += 1
        kinds = [AMBIGUOUS, NOT_FOUND] if rng.random() < 0.5 else [NOT_FOUND, AMBIGUOUS]
        for kind in kinds:
            make = self._ambiguous if kind == AMBIGUOUS else self._not_found
            try:
                candidate = make(c, solution, split, templates, turn, rng, stats)
            except Unanswerable:  # e.g. a live API that did not answer the namesake search: try the other kind
                stats["clarification_api_unavailable"] += 1
                candidate = None
            if candidate is None:
                continue
            key = (kind, candidate.entity_id, tuple(sorted(candidate.values.items())))
            if key in seen:
                stats["duplicate"] += 1
                return None
            seen.add(key)
            return candidate
        stats["clarification_unavailable"] += 1
        return None

    def _ambiguous(
        self, c: Combination, solution: Solution, split: str, templates: list[tuple[str, int, str]], turn: int,
        rng: random.Random, stats: Counter,
    ) -> _Candidate | None:
        """A question about a name several entities of `split` carry, phrased without the
        organisation (or field) that would tell them apart, or with one they share."""
        spec = self.combinations.spec
        head = solution.head
        entity = spec.api(head).entity
        key = spec.entities[entity].key
        name_param = c.inputs[0]
        written = templates[turn % len(templates)]
        given = c.given(written[2])
        narrowing = tuple(k for k in given if k != name_param)
        if self._namesake_searches[head] >= NAMESAKE_GIVE_UP and not self._namesake_hits[head]:
            return None  # this entity's names are not shared in this corpus (publication titles)
        for _ in range(AMBIGUOUS_SEARCHES):
            entity_id = self._sample(entity, split, rng)
            if entity_id is None:
                return None
            head_values = self.env.head_inputs(head, entity_id)
            values = {k: head_values[k] for k in given}
            self._namesake_searches[head] += 1
            found = namesakes(self.env, head, name_param, values[name_param])
            if found is None or len(found[1]) < 2:
                continue
            self._namesake_hits[head] += 1
            name_field, records = found
            shared = ambiguous_among(records, name_field, {k: values[k] for k in narrowing})
            if shared is not None:  # the question as written (with its organisation) leaves several
                phrasing, candidates = written, shared
            else:
                phrasing = self._unqualified(c, templates, turn)
                if phrasing is None:
                    stats["ambiguous_no_phrasing"] += 1
                    return None
                values, candidates = {name_param: values[name_param]}, records
            ids = sorted(str(r[key]) for r in candidates)
            if group_split(ids, self.test_fraction, self.validation_fraction) != split:
                stats["ambiguous_other_split"] += 1  # a namesake of a held-out split would leak into this one
                continue
            extra = self._branch_values(c, solution, entity_id, head_values, rng)
            if extra is None:
                stats["unanswerable"] += 1
                continue
            language, index, text = phrasing
            all_values = {**values, **extra}
            code = build_code(spec, c, solution, all_values)
            head_args = {k: values[k] for k in c.head_inputs if k in values}
            answer = ambiguous_answer(head, head_args, values[name_param], ids)
            query = text.format(**all_values)
            return _Candidate(self._own(ids, split), all_values, answer, query, language, index, [("template", code)], split, head_args)
        return None

    def _not_found(
        self, c: Combination, solution: Solution, split: str, templates: list[tuple[str, int, str]], turn: int,
        rng: random.Random, stats: Counter,
    ) -> _Candidate | None:
        """A question about a name nobody carries: an entity of `split`'s name with its words
        spliced with another name's, checked to match nothing; its other inputs (organisation,
        interest) stay the entity's. It is asked in full, in a phrasing (from `turn` on) that
        gives at least the combination's inputs: nothing but the made-up name keeps it from an
        answer."""
        head = solution.head
        entity = self.combinations.spec.api(head).entity
        full = [templates[(turn + k) % len(templates)] for k in range(len(templates))]
        phrasing = next((p for p in full if set(c.inputs) <= set(c.given(p[2]))), None)
        if phrasing is None:
            stats["not_found_no_phrasing"] += 1
            return None
        entity_id = self._sample(entity, split, rng)
        if entity_id is None:
            return None
        name_param = c.inputs[0]
        head_values = self.env.head_inputs(head, entity_id)
        values = {k: head_values[k] for k in c.given(phrasing[2])}
        for _ in range(FABRICATION_TRIES):
            donor = self.env.head_inputs(head, self.env.sample_entity(entity, rng))[name_param]
            made = fabricate(values[name_param], donor, rng)
            args = {**values, name_param: made}
            if made != values[name_param] and not self.env.call(head, **args):
                break
        else:
            stats["not_found_no_name"] += 1
            return None
        extra = self._branch_values(c, solution, entity_id, head_values, rng)
        if extra is None:
            stats["unanswerable"] += 1
            return None
        language, index, text = phrasing
        all_values = {**args, **extra}
        code = build_code(self.combinations.spec, c, solution, all_values)
        return _Candidate(entity_id, all_values, not_found_answer(head, args, made), text.format(**all_values), language, index,
                          [("template", code)], split, args)

    def _own(self, ids: list[str], split: str) -> str:
        """The entity a clarification is filed under: its first candidate of its own split."""
        return next((i for i in ids if entity_split(i, self.test_fraction, self.validation_fraction) == split), ids[0])

    def _unqualified(self, c: Combination, templates: list[tuple[str, int, str]], turn: int) -> tuple[str, int, str] | None:
        """The first phrasing from `turn` on that gives the name alone: one written so, or one
        that reads well without the clauses giving its other head inputs (an organisation)."""
        for k in range(len(templates)):
            language, index, text = templates[(turn + k) % len(templates)]
            drop = [p for p in c.given(text) if p != c.inputs[0]]
            if (shorter := unqualified(text, language, drop)) is not None:
                return language, index, shorter
        return None

    def _branch_values(
        self, c: Combination, solution: Solution, entity_id: str, head_values: dict[str, str], rng: random.Random
    ) -> dict[str, str] | None:
        """Values of placeholders that are no head input (a condition's value), as the entity's
        ground truth draws them; None when it has none."""
        if not c.placeholders - set(c.inputs):
            return {}
        try:
            _, values = ground_truth(self.env, c, solution, entity_id, {k: head_values[k] for k in c.inputs}, rng)
        except Unanswerable:
            return None
        return {k: v for k, v in values.items() if k not in c.inputs}

    def _as_ambiguous(self, candidate: _Candidate, outcome: Any) -> dict[str, Any] | None:
        """The clarification an ordinary candidate turns out to be when its run finds several
        namesakes its organisation does not tell apart (and they all belong to its split); None
        when the environment does not bear that out."""
        api = outcome.api or ""
        if not candidate.head_args:
            return None
        name_param = next(iter(candidate.head_args))
        found = namesakes(self.env, api, name_param, candidate.head_args[name_param])
        if found is None:
            return None
        name_field, records = found
        narrowing = {k: v for k, v in candidate.head_args.items() if k != name_param}
        shared = ambiguous_among(records, name_field, narrowing)
        if shared is None:
            return None
        key = self.combinations.spec.entities[self.combinations.spec.api(api).entity].key
        ids = sorted(str(r[key]) for r in shared)
        if group_split(ids, self.test_fraction, self.validation_fraction) != candidate.split:
            return None
        answer = ambiguous_answer(api, candidate.head_args, candidate.head_args[name_param], ids)
        return answer if clarification_matches(answer, outcome, key) else None

    def _right_for_first(self, c: Combination, candidate: _Candidate, api: str | None, result: Any) -> bool:
        """Whether a run's result is the ground truth of the entity its search put first (the
        namesake the program went on with)."""
        if not api or not result.ok:
            return False
        found = self.env.call(api, **candidate.head_args)
        spec = self.combinations.spec
        key = spec.entities[spec.api(api).entity].key
        if not found or not isinstance(found[0], dict) or found[0].get(key) is None:
            return False
        try:
            expected, _ = ground_truth(self.env, c, self.combinations.solution(c), str(found[0][key]), dict(candidate.values), random.Random(0))
        except Unanswerable:
            return False
        return answers_match(expected, result.result)

    def _sample(self, entity: str, split: str, rng: random.Random) -> str | None:
        """A random entity of `split` (rejection sampling on the stable split hash)."""
        for _ in range(200):
            entity_id = self.env.sample_entity(entity, rng)
            if entity_split(entity_id, self.test_fraction, self.validation_fraction) == split:
                return entity_id
        return None

    def _verify(self, batch: list[_Candidate], stats: Counter, combination: Combination | None = None) -> list[tuple[str, str] | None]:
        """For each candidate, the first (source, code) whose sandboxed result is its answer: for a
        clarification, whose call trace gives the same outcome (soay.clarifications). An ordinary
        candidate whose run finds namesakes its question does not tell apart is kept as that
        clarification when the environment bears it out (its answer and entity are replaced),
        never as the value the first namesake gave; and, given its `combination`, only when that
        value is right for the first namesake (the program is right whichever one is meant: a
        question by a name alone finds namesakes often, and its run's outcome alone would keep a
        program that computes the wrong thing)."""
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
                candidate = batch[i]
                outcome = analyse(getattr(result, "trace", None) or [], result.ok, result.result, self.fuzzy)
                if candidate.clarification:
                    if clarification_matches(candidate.answer, outcome):
                        stats[f"{source}_verified"] += 1
                        stats[f"{candidate.answer['kind']}_verified"] += 1
                        verified[i] = (source, code)
                        continue
                    stats[f"{source}_exec_error" if outcome.kind == "answer" and not result.ok else f"{source}_mismatch"] += 1
                elif outcome.kind == AMBIGUOUS:
                    answer = self._as_ambiguous(candidate, outcome)
                    if answer is not None and combination is not None and not self._right_for_first(combination, candidate, outcome.api, result):
                        stats["ambiguous_run_wrong_answer"] += 1
                        answer = None
                    if answer is None:
                        stats["ambiguous_run"] += 1
                    else:
                        candidate.answer, candidate.entity_id = answer, self._own(answer["candidates"], candidate.split)
                        stats[f"{source}_verified"] += 1
                        stats["ambiguous_verified"] += 1
                        stats["ambiguous_from_run"] += 1
                        verified[i] = (source, code)
                        continue
                elif not result.ok:
                    stats[f"{source}_exec_error"] += 1
                elif not answers_match(candidate.answer, result.result):
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
