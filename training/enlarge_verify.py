"""Re-running logged programs in the sandbox, fanned out over Ray actors.

Each worker holds a warm sandbox (one server process; a batch of snippets runs in one forked
child, a fresh namespace per snippet), the environment for entity look-ups, and the combination
matcher. It returns, per distinct (program, solution), what the re-run gave and what the library
makes of the program; comparing with each record's logged result is the consumer's part, so one
re-run serves every record that logged the same program.

The re-run's outcome is read from its call trace the way the served answer stage and the triplet
factory read it (soay/outcomes.py `analyse`): an answer, a searched name that matched nobody, or
one several entities carry. For the last two the check holds the clarification the re-run gives
(soay/clarifications.py `outcome_answer`, with the candidates' ids): what a served ambiguous or
not-found request is stored as when the re-run's outcome is the one the service logged.

With `workers=0` the consumer's own process holds one such worker: no Ray, for small runs and
tests. Either way the consumer stays the only writer of the dataset.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray

from soay.clarifications import CLARIFICATION_KINDS, outcome_answer
from soay.domains import get_domain, resolve
from soay.log_triplets import CombinationMatcher, entity_of, path_problem
from soay.outcomes import analyse, fuzzy_apis
from soay.settings import SandboxSettings
from soay.solutions import parse_solution
from training.generate import sandbox_for

Job = tuple[str, str]
"""(code, solution) of a logged record."""


@dataclass
class Check:
    """What one re-run of a program gave and what the library makes of it."""

    ok: bool
    result: Any = None
    error: str | None = None
    error_type: str | None = None
    problem: str | None = None
    """path_mismatch or no_combination when the run succeeded but cannot make a triplet."""
    combination_id: str | None = None
    values: dict[str, str] | None = None
    entity_id: str = ""
    kind: str = "answer"
    """The re-run's outcome (soay.outcomes.analyse): answer, ambiguous or not_found."""
    clarification: dict[str, Any] | None = None
    """For an ambiguous or not-found outcome, the clarification answer it gives (its candidates'
    ids included): the stored answer of a served request that logged the same kind."""


class Verifier:
    """One sandbox, one environment and one matcher; checks programs a batch at a time."""

    def __init__(self, domain_name: str, db_path: str, sandbox: SandboxSettings, chunk: int = 250) -> None:
        domain = get_domain(domain_name)
        self.spec = domain.spec
        self.fuzzy = fuzzy_apis(domain.spec)
        self.matcher = CombinationMatcher(domain.combinations)
        self.sandbox = sandbox_for(domain_name, Path(db_path), sandbox)
        self.env = resolve(self.sandbox.env_factory)(**self.sandbox.env_kwargs)
        self.chunk = chunk

    def check(self, jobs: list[Job]) -> list[dict[str, Any]]:
        """One check per job, as plain dicts (they cross process boundaries)."""
        out: list[dict[str, Any]] = []
        for start in range(0, len(jobs), self.chunk):
            part = jobs[start : start + self.chunk]
            for (code, solution), run in zip(part, self.sandbox.run_batch([code for code, _ in part])):
                out.append(self._judge(code, solution, run).__dict__)
        return out

    def _judge(self, code: str, solution: str, run: Any) -> Check:
        check = Check(ok=run.ok, result=run.result, error=run.error, error_type=run.error_type)
        outcome = analyse(run.trace, run.ok, run.result, self.fuzzy)
        check.kind = outcome.kind
        apis = parse_solution(solution)
        called = [c["api"] for c in run.calls]
        if outcome.kind in CLARIFICATION_KINDS:
            # a clarification's run may stop at its search (an empty list indexed): it must start
            # at the solution's head, and that search is what the clarification is about
            if not called or called[0] != apis[0] or outcome.api != apis[0]:
                check.problem = "path_mismatch"
                return check
            head = self.spec.api(apis[0])
            check.clarification = outcome_answer(outcome, self.spec.entities[head.entity].key)
        elif not run.ok:
            return check
        else:
            check.problem = path_problem(apis, called)
            if check.problem:
                return check
        match = self.matcher.match(apis, code)
        if match is None:
            check.problem = "no_combination"
            return check
        check.combination_id, check.values = match.combination.id, match.values
        if check.clarification is None:
            check.entity_id = entity_of(self.spec, run.calls, self.env)
        elif check.clarification.get("candidates"):
            check.entity_id = check.clarification["candidates"][0]
        return check

    def close(self) -> None:
        self.sandbox.close()
        self.env.close()


RemoteVerifier = ray.remote(Verifier)


class VerifierPool:
    """`check` over local or Ray workers, with a memo of checks by (program, solution).

    The memo is sound because a program's re-run depends only on its text and the environment,
    which does not change during a run; it is what makes a stream of repeated questions cheap.
    """

    def __init__(
        self, domain_name: str, db_path: Path, sandbox: SandboxSettings, workers: int, worker_cpus: float = 1.0,
        chunk: int = 250, memo_size: int = 100_000,
    ) -> None:
        self.workers = workers
        self.chunk = chunk
        self.memo: OrderedDict[Job, Check] = OrderedDict()
        self.memo_size = memo_size
        self.reruns = 0
        if workers == 0:
            self.local: Verifier | None = Verifier(domain_name, str(db_path), sandbox, chunk)
            self.actors: list[Any] = []
        else:
            self.local = None
            actor = RemoteVerifier.options(num_cpus=worker_cpus)
            self.actors = [actor.remote(domain_name, str(db_path), sandbox, chunk) for _ in range(workers)]

    def check(self, jobs: list[Job]) -> dict[Job, Check]:
        """A check for every job; only jobs not in the memo are re-run, spread over the workers."""
        todo = [job for job in dict.fromkeys(jobs) if job not in self.memo]
        if todo:
            self.reruns += len(todo)
            if self.local is not None:
                results = self.local.check(todo)
            else:
                size = max(1, min(self.chunk, -(-len(todo) // len(self.actors))))
                parts = [todo[i : i + size] for i in range(0, len(todo), size)]
                futures = [self.actors[i % len(self.actors)].check.remote(part) for i, part in enumerate(parts)]
                results = [r for part in ray.get(futures) for r in part]
            for job, result in zip(todo, results):
                self.memo[job] = Check(**result)
        found = {job: self.memo[job] for job in jobs}
        while len(self.memo) > self.memo_size:
            self.memo.popitem(last=False)  # the oldest programs first
        return found

    def close(self) -> None:
        if self.local is not None:
            self.local.close()
        for actor in self.actors:
            ray.kill(actor)
