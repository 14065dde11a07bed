"""The ground-truth oracle: the answer to an instantiated combination, read from the environment.

It follows the combination's solution from the *known* head entity (the one the query was made
from), so it never goes through the fuzzy search the generated code must get right. A triplet is
kept only when the code, run in the sandbox from the query's words alone, lands on the same
answer. Instances without one clear answer (an empty list to pick from, a tie for the maximum,
an empty result) are reported as `Unanswerable` and not used.

A `group` combination (the scholars at an organisation, in a field) names no entity: what it asks
about is what the search finds for the question's words, so its answer starts from the search's
results themselves.
"""

from __future__ import annotations

import random
from typing import Any

from soay.combinations import Combination
from soay.environment.base import Environment
from soay.solutions import Solution


class Unanswerable(Exception):
    """The instance has no single well-defined answer; sample another."""


def ground_truth(
    env: Environment,
    combination: Combination,
    solution: Solution,
    entity_id: str,
    values: dict[str, str],
    rng: random.Random,
) -> tuple[Any, dict[str, str]]:
    """The answer and the full placeholder values (a branch value is chosen here so it matches).

    `values` holds the head inputs the question gives; when the combination filters on a
    condition whose value is not a head input, a value is drawn from the candidates actually
    present so the answer is not empty.
    """
    if combination.group:
        results = env.call(solution.head, **{k: values[k] for k in combination.head_inputs if k in values})
    else:
        results = [env.head_record(solution.head, entity_id)]
    loop = combination.loop_hop
    for i, coupling in enumerate(solution.couplings):
        pick = combination.pick.get(i, "first")
        if i == loop:
            items = _container(results, coupling)
            if not items:
                raise Unanswerable("nothing to loop over")
            rows = [(item, _follow(env, combination, solution, i, item)) for item in items]
            return _answer_rows(combination, rows, dict(values), rng)
        results = env.call(solution.apis[i + 1], **{coupling.param: _key(_select(results, coupling, pick), coupling)})
    return _answer_tail(combination, results, dict(values), rng)


def _follow(env: Environment, combination: Combination, solution: Solution, hop: int, item: dict) -> Any:
    """Run the hops after `hop` for one looped item, taking the first item at every later pick."""
    result = env.call(solution.apis[hop + 1], **{solution.couplings[hop].param: _key(item, solution.couplings[hop])})
    for i in range(hop + 1, len(solution.couplings)):
        c = solution.couplings[i]
        result = env.call(solution.apis[i + 1], **{c.param: _key(_select(result, c, combination.pick.get(i, "first")), c)})
    return result


def _container(result: Any, coupling) -> list[dict]:
    if isinstance(result, list):
        return result
    if coupling.nested:
        return result.get(coupling.nested) or []
    return [result]


def _select(result: Any, coupling, pick: str) -> dict:
    items = _container(result, coupling)
    if not items:
        raise Unanswerable("empty result where an item is needed")
    return items[-1] if pick == "last" else items[0]


def _key(item: dict, coupling) -> Any:
    return item[coupling.path[-1]]


def _contains(haystack: Any, needle: str) -> bool:
    return haystack is not None and needle in haystack


def _bind(where, values: dict[str, str], candidates: list[Any], rng: random.Random) -> None:
    """Give the branch placeholder a value that occurs among the candidates, unless given."""
    if where.contains and where.contains not in values:
        values[where.contains] = _choose(candidates, rng)


def _choose(candidates: list[Any], rng: random.Random) -> str:
    flat = sorted({v for c in candidates for v in (c if isinstance(c, list) else [c]) if isinstance(v, str) and v})
    if not flat:
        raise Unanswerable("no value to branch on")
    return rng.choice(flat)


def _unique_best(rows: list[Any], score, maximise: bool) -> Any:
    scored = [(score(r), r) for r in rows]
    if not scored:
        raise Unanswerable("nothing to compare")
    best = max(s for s, _ in scored) if maximise else min(s for s, _ in scored)
    winners = [r for s, r in scored if s == best]
    if len(winners) != 1:
        raise Unanswerable("tie for the best item")
    return winners[0]


def _answer_tail(c: Combination, tail: Any, values: dict[str, str], rng: random.Random) -> tuple[Any, dict[str, str]]:
    a = c.answer
    attr = a.attr

    def read(item: Any) -> Any:
        return item[attr] if attr and isinstance(item, dict) else item

    if a.op == "value":
        answer = tail.get(attr) if tail else None
    elif a.op == "first":
        if not tail:
            raise Unanswerable("empty list")
        answer = read(tail[0])
    elif a.op == "list":
        answer = [read(t) for t in tail]
    elif a.op == "count":
        answer = len(tail)
    elif a.op in ("max", "min"):
        answer = read(_unique_best(tail, lambda t: t[a.by], a.op == "max"))
    elif a.op == "filter":
        _bind(a.where, values, [t[a.where.attr] for t in tail], rng)
        answer = [read(t) for t in tail if _contains(t[a.where.attr], a.where.value(values))]
    else:
        raise ValueError(f"op {a.op!r} is not defined without a loop")
    return _check(answer), values


def _answer_rows(
    c: Combination, rows: list[tuple[dict, Any]], values: dict[str, str], rng: random.Random
) -> tuple[Any, dict[str, str]]:
    a = c.answer

    def field(tail: Any, name: str) -> Any:
        return tail if not isinstance(tail, dict) else tail.get(name)

    def report(row: tuple[dict, Any]) -> Any:
        item, tail = row
        return item[a.attr] if a.source == "item" else field(tail, a.attr)

    if a.op in ("max", "min"):
        answer = report(_unique_best(rows, lambda r: field(r[1], a.by), a.op == "max"))
    elif a.op == "filter":
        _bind(a.where, values, [field(t, a.where.attr) for _, t in rows], rng)
        answer = [report(r) for r in rows if _contains(field(r[1], a.where.attr), a.where.value(values))]
    elif a.op == "flatten":
        answer = []
        for _, tail in rows:
            for t in tail:
                if t[a.attr] not in answer:
                    answer.append(t[a.attr])
    elif a.op == "list":
        answer = [report(r) for r in rows]
    elif a.op == "count":
        answer = len(rows)
    else:
        raise ValueError(f"op {a.op!r} is not defined for a loop")
    return _check(answer), values


def _check(answer: Any) -> Any:
    if answer is None or answer == "" or answer == []:
        raise Unanswerable("empty answer")
    return answer
