"""What a run of a generated program means, read from its call trace: an answer, a name that
matched nobody, or a name that several entities share; and how the answer was obtained.

The sandbox records every API call a program makes with a compact summary of its result
(`ExecutionResult.trace`: api, args, found, items or error). The rules here are generic over that
trace and the spec's fuzzy (search) APIs, so they hold for any domain:

* **not found**: a search call that found nothing, in a run that failed or left an empty answer
  (a program that takes `person_list[0]` of an empty search fails with an IndexError: the truth
  is that nobody by that name exists, not that the program broke).
* **ambiguous**: the first search call found several results whose name (a text field) equals the
  searched text, ignoring case and diacritics, and the call's other arguments (an organisation, an
  interest) do not single one out. A program that takes the first of them would silently describe
  one namesake; the candidates are what a person (or client) picks from to ask again.
* **explanation**: each call (consecutive calls of one API merged) with what it was asked, how
  much it found and what the program took from it, for the next call or for the answer.

Plain Python on JSON-compatible values: the serving answer stage and SoAyEval both use it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from soay.environment.academic_corpus import normalize

Kind = Literal["answer", "not_found", "ambiguous"]

MAX_EXPLANATION_STEPS = 12
"""Steps listed in an explanation; the rest are merged into the last one."""
MAX_CANDIDATES = 10
EMPTY_RESULTS = (None, "", [], {})


@dataclass
class Outcome:
    """How a run turned out, for the person who asked.

    kind: "answer" (the run's result stands), "not_found" (a search matched nothing) or
        "ambiguous" (several entities carry the searched name).
    api / args: the search call that decided "not_found" or "ambiguous" (None for an answer).
    candidates: for "ambiguous", the namesakes as the search returned them (ids, names,
        organisations, interests...), best match first.
    explanation: the steps of the run, see `explain`.
    """

    kind: Kind
    api: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    candidates: list[dict[str, Any]] | None = None
    explanation: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "api": self.api,
            "args": self.args,
            "candidates": self.candidates,
            "explanation": self.explanation,
        }


def fuzzy_apis(spec: Any) -> dict[str, str]:
    """The spec's search APIs, each with the label of the entity it finds ("scholar")."""
    return {api.name: spec.entities[api.entity].label for api in spec.apis if api.kind == "fuzzy"}


def _is_fuzzy(api: str, fuzzy: Collection[str] | None) -> bool:
    return api in fuzzy if fuzzy is not None else api.startswith("search")


def _norm(value: Any) -> str:
    return normalize(value) if isinstance(value, str) else ""


def _texts(value: Any) -> list[str]:
    """The normalised texts of a field: one for a string, one per string of a list."""
    if isinstance(value, str):
        return [_norm(value)]
    if isinstance(value, list):
        return [_norm(v) for v in value if isinstance(v, str)]
    return []


def agrees(argument: str, record: Mapping[str, Any], skip: str) -> bool:
    """Whether a record agrees with a narrowing argument (an organisation, an interest): some
    field other than the matched name holds it, or holds all its words."""
    wanted = _norm(argument)
    words = set(wanted.split())
    if not words:
        return True
    for key, value in record.items():
        if key == skip:
            continue
        for text in _texts(value):
            if text == wanted or words <= set(text.split()):
                return True
    return False


def _string_args(args: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [(k, v) for k, v in args.items() if isinstance(v, str) and v.strip()]


def find_not_found(trace: list[dict[str, Any]], fuzzy: Collection[str] | None = None) -> dict[str, Any] | None:
    """The first search call of the trace that found nothing, or None."""
    for call in trace:
        if _is_fuzzy(call.get("api", ""), fuzzy) and "error" not in call and call.get("found") == 0:
            return call
    return None


def name_fields(records: list[dict[str, Any]]) -> list[str]:
    """The fields that name a record (a scholar's name, a publication's title): a search whose
    text equals one of them in several records has found namesakes, not just matches."""
    keys = records[0].keys() if records else ()
    return [k for k in keys if k in ("name", "title") or k.endswith(("_name", "_title"))]


def find_ambiguity(trace: list[dict[str, Any]], fuzzy: Collection[str] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """(call, candidates) when the first search call found several namesakes of the searched text
    that its other arguments do not tell apart; None otherwise."""
    first = next((c for c in trace if _is_fuzzy(c.get("api", ""), fuzzy) and "error" not in c), None)
    if first is None or (first.get("found") or 0) < 2:
        return None
    records = [r for r in first.get("items") or [] if isinstance(r, dict)]
    for key, searched in _string_args(first.get("args") or {}):
        target = _norm(searched)
        for name_field in name_fields(records):
            namesakes = [r for r in records if _norm(r.get(name_field)) == target]
            if len(namesakes) < 2:
                continue
            others = [v for k, v in _string_args(first["args"]) if k != key]
            agreeing = [r for r in namesakes if all(agrees(v, r, name_field) for v in others)]
            if len(agreeing) == 1:
                return None  # the organisation or interest given picks one out
            return first, (agreeing or namesakes)[:MAX_CANDIDATES]
    return None


def _label(record: Mapping[str, Any]) -> str:
    """A record as a person would name it: "Wei Zhang (Tsinghua University)"."""
    name = next((record[k] for k in ("name", "title") if isinstance(record.get(k), str)), None)
    if name is None:
        name = next((v for k, v in record.items() if isinstance(v, str) and not k.endswith("id")), "")
    where = record.get("organization") or record.get("year")
    return f"{name} ({where})" if name and where else str(name)


def _atoms(value: Any) -> set[str]:
    """The value and, for a list or a record, its elements (as reprs): what an answer may hold."""
    atoms = {repr(value)}
    if isinstance(value, list):
        atoms.update(repr(v) for v in value)
    elif isinstance(value, dict):
        atoms.update(repr(v) for v in value.values())
    return atoms


def _fields_holding(call: dict[str, Any], wanted: set[str]) -> dict[str, set[int]]:
    """Field -> indexes of the call's results whose field holds one of `wanted` (reprs)."""
    taken: dict[str, set[int]] = {}
    for i, item in enumerate(call.get("items") or []):
        if isinstance(item, dict):
            for key, value in item.items():
                if isinstance(value, (str, int, float, list)) and not isinstance(value, bool) and repr(value) in wanted:
                    taken.setdefault(key, set()).add(i)
        elif repr(item) in wanted:
            taken.setdefault("value", set()).add(i)
    return taken


def _taken(call: dict[str, Any], later: list[dict[str, Any]], result: Any) -> str:
    """What the program took from `call`: the fields of its results that later calls were given,
    else those the answer holds ("venue of result 1: <title> (<year>)")."""
    if "error" in call:
        return "the call failed: " + call["error"]
    if call.get("found") == 0:
        return "nothing (it found nothing)"
    taken = _fields_holding(call, {repr(v) for c in later for v in (c.get("args") or {}).values()})
    if not taken and result not in EMPTY_RESULTS:
        taken = _fields_holding(call, _atoms(result))
        if not taken:
            return "used for the answer"
    if not taken:
        return "nothing used" if result in EMPTY_RESULTS else "used for the answer"
    parts = []
    for key, rows in taken.items():
        if len(rows) == 1:
            (row,) = rows
            item = call["items"][row]
            parts.append(f"{key} of result {row + 1}" + (f": {_label(item)}" if isinstance(item, dict) else ""))
        else:
            parts.append(f"{key} of {len(rows)} results")
    return "; ".join(parts)


def explain(trace: list[dict[str, Any]], result: Any = None) -> list[dict[str, Any]]:
    """The steps of a run: {"api", "args", "found", "took"} per call, consecutive calls of one
    API merged into one step (with "calls": how many, "found": in all, "args": the first's)."""
    steps: list[dict[str, Any]] = []
    for i, call in enumerate(trace):
        api = call.get("api", "")
        took = _taken(call, trace[i + 1 :], result)
        if steps and (steps[-1]["api"] == api or len(steps) >= MAX_EXPLANATION_STEPS):
            last = steps[-1]
            last["calls"] = last.get("calls", 1) + 1
            last["found"] = (last["found"] or 0) + (call.get("found") or 0)
            if last["api"] != api:
                last["api"] = f"{last['api']}, ..."
            if "error" in call:
                last["took"] = took
            elif last["took"] != took and " of result " in last["took"] and " of result " in took:
                fields = last["took"].split(" of result ")[0]
                if fields == took.split(" of result ")[0]:
                    last["took"] = f"{fields} of each call's result"
            continue
        steps.append({"api": api, "args": dict(call.get("args") or {}), "found": call.get("found"), "took": took})
    return steps


def analyse(
    trace: list[dict[str, Any]], ok: bool, result: Any, fuzzy: Collection[str] | None = None
) -> Outcome:
    """The outcome of one run from its trace, its success and its final result.

    `fuzzy` names the search APIs (`fuzzy_apis(spec)`); by default, those whose name starts with
    "search".
    """
    steps = explain(trace, result if ok else None)
    missing = find_not_found(trace, fuzzy)
    if missing is not None and (not ok or result in EMPTY_RESULTS):
        return Outcome("not_found", missing["api"], dict(missing.get("args") or {}), None, steps)
    ambiguity = find_ambiguity(trace, fuzzy)
    if ambiguity is not None:
        call, candidates = ambiguity
        return Outcome("ambiguous", call["api"], dict(call.get("args") or {}), candidates, steps)
    return Outcome("answer", explanation=steps)
