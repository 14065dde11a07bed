"""Combinations for an imported spec, generated from its solution library.

A hand-written intents file (soay/intents/*.yaml) says which question each solution answers;
for an imported API nobody has written one yet, so one is generated: for every solution that
starts with a search, questions about the attributes its last API returns (a value of a record,
the first item of a list, how many items, the item with the largest number), phrased from the
spec's own names and descriptions with the templates in phrasings.yaml. Each candidate is
checked like a hand-written one (soay/combinations.py), so a question that a shorter solution
already answers is dropped. The result is meant for a person to review and improve.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from soay.combinations import LANGUAGES, Combination, CombinationSet
from soay.importers.infer import singular, snake
from soay.importers.words import words
from soay.solutions import Solution, SolutionLibrary
from soay.spec import Api, ApiSpec, Attribute

PHRASINGS = yaml.safe_load((Path(__file__).with_name("phrasings.yaml")).read_text(encoding="utf-8"))
MAX_VALUE_ANSWERS = 3
"""Record attributes asked about per solution: enough variety without one solution dominating."""
MAX_SOLUTIONS_PER_HEAD = 40
"""Solutions per search that get generated questions, shortest first: a search in a large API
(openFEC) starts thousands of 3-hop solutions, more than a person could review."""
MAX_HEAD_INPUTS = 3
"""Head inputs a question gives at most (the search text first)."""
_MARK = "\x00"
_NUMERIC = ("int", "float")
_SCALAR = ("str", "int", "float", "list[str]")


def generate_intents(spec: ApiSpec, library: SolutionLibrary) -> tuple[list[dict[str, Any]], list[str]]:
    """Combinations (as intents-file entries) for every solution with a search head, and notes."""
    combinations: list[dict[str, Any]] = []
    notes: list[str] = []
    ids: set[str] = set()
    asked: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    for solution in library:
        head = spec.api(solution.head)
        if head.kind != "fuzzy":
            notes.append(f"{solution}: {_why_no_question(spec, head)}; no combination")
            continue
        sources = head_input_sources(head)
        if not sources:
            notes.append(f"{solution}: no input of {head.name} can be read back from its results; no combination")
            continue
        if asked[head.name] >= MAX_SOLUTIONS_PER_HEAD:
            skipped[head.name] += 1
            continue
        asked[head.name] += 1
        inputs = _head_inputs(head, sources)
        if solution.hops == 1:  # ask about the rest of what the search returns, given what a person knows
            inputs = [p.name for p in head.params if p.required and p.name in sources] or inputs[:1]
        kept = 0
        values = 0
        for candidate in _candidates(spec, solution, inputs, sources):
            if candidate["answer"]["op"] == "value" and values >= MAX_VALUE_ANSWERS:
                continue
            candidate["id"] = _unique_id(candidate["id"], ids)
            try:
                CombinationSet(spec, [Combination.model_validate(candidate)], library)
            except ValueError as e:
                notes.append(f"{solution}: dropped {candidate['id']} ({e})")
                continue
            combinations.append(candidate)
            kept += 1
            values += candidate["answer"]["op"] == "value"
        if not kept:
            notes.append(f"{solution}: no question left after the concise check")
    for head, count in skipped.items():
        notes.append(f"{count} longer solutions starting with {head} get no generated questions "
                     f"(at most {MAX_SOLUTIONS_PER_HEAD} per head, shortest first; write more by hand)")
    return combinations, notes


def _head_inputs(head: Api, sources: dict[str, str]) -> list[str]:
    """What the questions give: the text a person searches with first (`query`, `name`), then the
    required inputs, then the rest; a few, because a search in the wild takes dozens of filters."""
    searched = [p.name for p in head.params if p.name in sources and snake(p.name) in words().search_params]
    required = [p.name for p in head.params if p.name in sources and p.required and p.name not in searched]
    rest = [name for name in sources if name not in searched and name not in required]
    return (searched + required + rest)[:MAX_HEAD_INPUTS]


def _why_no_question(spec: ApiSpec, head: Api) -> str:
    """Why a solution gets no generated question: what its head takes is no text a person types."""
    if any(p.required and p.ref for p in head.params):
        if all(spec.entities[p.ref].typed for p in head.params if p.required and p.ref):
            return (f"starts with {head.name}, a lookup by a key a person types; questions that give the key are "
                    "not generated yet")
        return "starts with a lookup by id, which no question gives"
    return (f"starts with {head.name}, which takes no text a person types (a list or record by itself); "
            "a question over it gives no input, which combinations cannot express yet")


def head_input_sources(head: Api) -> dict[str, str]:
    """Search parameters whose value can be read off the search's own result, and from which attribute.

    `title` from the attribute `title`, `interest` from the first of `interests`; a required
    free-text parameter or a search parameter (`query`, `q`, words.yaml) with no attribute of its
    name (`publication_info`) is filled with the record's name: its first attribute named like
    one (title, name, login...), else its first text attribute. A parameter none of these fits
    could not be filled from a sampled entity and is left out of the questions. The live
    environment reads head inputs with the same rule, so the questions and their values agree.
    """
    names = {a.name: a for a in head.attributes}
    texts = _name_attributes(head)
    out: dict[str, str] = {}
    for p in head.params:
        if p.ref:
            continue
        attr = names.get(p.name) or names.get(p.name + "s")
        searched = snake(p.name) in words().search_params and p.type in ("str", "list[str]")
        if attr is not None and attr.type in _SCALAR + ("bool",):
            out[p.name] = attr.name
        elif (searched or (p.required and p.type == "str")) and texts and texts[0] not in out.values():
            out[p.name] = texts[0]
    return out


def _name_attributes(head: Api) -> list[str]:
    """Text attributes of a search's records, those that name a record (words.yaml) first."""
    texts = [a.name for a in head.attributes if a.type == "str" and not a.ref]
    preferred = [h for h in words().headings if h in texts]
    return preferred + [t for t in texts if t not in preferred]


def _candidates(spec: ApiSpec, solution: Solution, inputs: list[str], sources: dict[str, str]) -> list[dict[str, Any]]:
    tail = spec.api(solution.tail)
    subject = {lang: _subject(spec, solution, inputs, lang) for lang in LANGUAGES}
    base = snake("_".join(solution.apis))[:48]
    given = {sources[i] for i in inputs}
    scalar = [a for a in tail.attributes if a.type in _SCALAR and not a.ref and not (solution.hops == 1 and a.name in given)]
    out: list[dict[str, Any]] = []
    if tail.returns == "record":
        for a in scalar:
            out.append(_combo(f"{base}_{a.name}", solution, inputs, {"op": "value", "attr": a.name}, "value", subject, _attr_text(a)))
        return out
    if tail.returns == "values":
        a = tail.attributes[0]
        listed = {lang: _subject_step(PHRASINGS["subject"][lang]["nested"], _items(tail), s) for lang, s in subject.items()}
        out.append(_combo(f"{base}_first", solution, inputs, {"op": "first"}, "value", listed, _attr_text(a)))
        out.append(_combo(f"{base}_count", solution, inputs, {"op": "count"}, "count", subject, _items(tail)))
        return out
    listed = subject if tail.kind == "fuzzy" else {
        lang: _subject_step(PHRASINGS["subject"][lang]["move"], tail.relation, s) for lang, s in subject.items()
    }
    if scalar:
        out.append(_combo(f"{base}_{scalar[0].name}", solution, inputs, {"op": "first", "attr": scalar[0].name}, "value", listed, _attr_text(scalar[0])))
    if tail.kind != "fuzzy":
        out.append(_combo(f"{base}_count", solution, inputs, {"op": "count"}, "count", subject, _items(tail)))
        numbers = [a for a in tail.attributes if a.type in _NUMERIC and a.name not in inputs]
        names = [a for a in scalar if a.type == "str"]
        if numbers and names:
            by, report = numbers[0], names[0]
            out.append(
                _combo(f"{base}_max_{by.name}", solution, inputs, {"op": "max", "by": by.name, "attr": report.name}, "max",
                       subject, _attr_text(report), items=_items(tail), by=_attr_text(by))
            )
    return out


def _combo(
    cid: str, solution: Solution, inputs: list[str], answer: dict[str, Any], op: str, subject: dict[str, str], attr: str, **extra: str
) -> dict[str, Any]:
    templates = PHRASINGS["ops"][op]
    phrasings = {}
    for lang, ts in templates.items():
        fill = {"subject": subject[lang], "attr": attr, "items": extra.get("items", attr), "by": extra.get("by", "")}
        phrasings[lang] = [_finish(t.format(**fill)) for t in ts]
    return {"id": re.sub(r"[^a-z0-9_]+", "_", cid.lower()), "solution": str(solution), "inputs": list(inputs), "answer": answer, "phrasings": phrasings}


def _finish(text: str) -> str:
    """Escape braces from descriptions, then turn the input marks back into placeholders."""
    text = text.replace("{", "{{").replace("}", "}}")
    return re.sub(f"{_MARK}(\\w+){_MARK}", r"{\1}", text)


def _subject(spec: ApiSpec, solution: Solution, inputs: list[str], lang: str) -> str:
    """What the question is about: the head entity with its inputs, then one step per hop."""
    forms = PHRASINGS["subject"][lang]
    head = spec.api(solution.head)
    label = spec.entities[head.entity].label
    first, rest = inputs[0], inputs[1:]
    text = forms["head"].format(label=label, first=f"{_MARK}{first}{_MARK}")
    if rest:
        qualifiers = [forms["qualifier"].format(name=n.replace("_", " "), value=f"{_MARK}{n}{_MARK}") for n in rest]
        text += f" ({', '.join(qualifiers)})" if lang == "en" else f"（{'，'.join(qualifiers)}）"
    for i, coupling in enumerate(solution.couplings):
        src = spec.api(solution.apis[i])
        if coupling.nested:
            text = _subject_step(forms["nested"], singular(coupling.nested.replace("_", " ")), text)
        elif src.relation not in ("self", "search"):
            text = _subject_step(forms["move"], src.relation, text)
    return text


def _subject_step(pattern: str, relation: str, subject: str) -> str:
    return pattern.format(relation=relation.replace("_", " "), subject=subject)


def _items(api: Api) -> str:
    if api.returns == "values":
        return api.attributes[0].name.replace("_", " ")
    return api.relation.replace("_", " ") + " entries" if api.relation not in ("self", "search") else "results"


def _attr_text(a: Attribute) -> str:
    text = " ".join(a.description.split())
    return text if text and len(text) <= 40 else a.name.replace("_", " ")


def _unique_id(cid: str, taken: set[str]) -> str:
    candidate, k = cid, 2
    while candidate in taken:
        candidate, k = f"{cid}_{k}", k + 1
    taken.add(candidate)
    return candidate
