"""Clarification answers: a searched name that matched nobody, or that several entities carry.

The served answer stage reads a run's call trace with soay/outcomes.py and, instead of passing off
the first namesake as *the* one, says that the name matched nobody or lists the namesakes. The
triplet factory (soay/triplets.py) makes questions whose expected answer is that clarification,
and SoAyEval (soay/evaluation.py) scores them, by the same rule. This module holds what the three
share: the answer's representation, how an outcome is compared with it, the ground truth read from
the environment, and the helpers that make such questions (a phrasing without the organisation,
a name nobody carries).

A clarification answer is a plain JSON object (it is stored in the triplet's `answer`):

    {"kind": "ambiguous", "api": "searchPerson", "searched": "Wei Zhang",
     "args": {"name": "Wei Zhang"}, "candidates": ["<person_id>", "<person_id>"]}
    {"kind": "not_found", "api": "searchPerson", "searched": "Weaka Zhaler",
     "args": {"name": "Weaka Zhaler", "organization": "Tsinghua University"}}

kind: "ambiguous" or "not_found"; api: the search API the question goes through; searched: the text
that was searched (the name or title); args: the arguments of that search call as the program
makes it; candidates (ambiguous only): the ids (the entity's key field, `person_id`) of every
entity the answer must list, sorted.

A run's outcome matches it when it has the same kind, comes from a call of the same API whose
arguments hold the searched text (compared like names: case, spacing and diacritics aside) and,
for "ambiguous", lists exactly the same candidate ids.
"""

from __future__ import annotations

import random
import re
from collections.abc import Collection, Mapping
from typing import Any

from soay.environment.text import normalize
from soay.answers import answers_match
from soay.outcomes import MAX_CANDIDATES, Outcome, agrees, analyse, name_fields

AMBIGUOUS, NOT_FOUND = "ambiguous", "not_found"
CLARIFICATION_KINDS = (AMBIGUOUS, NOT_FOUND)


# --- the answer ------------------------------------------------------------------------------


def is_clarification(answer: Any) -> bool:
    """Whether a triplet's answer is a clarification (see the module docstring), not a value."""
    return (
        isinstance(answer, Mapping)
        and answer.get("kind") in CLARIFICATION_KINDS
        and {"api", "searched", "args"} <= set(answer)
    )


def ambiguous_answer(api: str, args: Mapping[str, Any], searched: str, candidate_ids: Collection[str]) -> dict[str, Any]:
    return {"kind": AMBIGUOUS, "api": api, "searched": searched, "args": dict(args), "candidates": sorted(map(str, candidate_ids))}


def not_found_answer(api: str, args: Mapping[str, Any], searched: str) -> dict[str, Any]:
    return {"kind": NOT_FOUND, "api": api, "searched": searched, "args": dict(args)}


def record_id(record: Mapping[str, Any], key: str | None = None) -> str | None:
    """A search result's id: its `key` field, else its first field named like an id."""
    if key is not None and record.get(key) is not None:
        return str(record[key])
    for k, v in record.items():
        if (k == "id" or k.endswith("_id")) and v is not None:
            return str(v)
    return None


def _searched_text(args: Mapping[str, Any]) -> str:
    """The text a search call looked for: its name-like argument, else its first text."""
    texts = [(k, v) for k, v in args.items() if isinstance(v, str) and v.strip()]
    named = [v for k, v in texts if k in ("name", "title") or k.endswith(("_name", "_title", "_info"))]
    return (named or [v for _, v in texts] or [""])[0]


def outcome_answer(outcome: Outcome, key: str | None = None) -> dict[str, Any] | None:
    """The clarification answer an outcome gives (None for an ordinary answer): what a served
    request's re-run would be stored as."""
    if outcome.kind == AMBIGUOUS:
        ids = [record_id(c, key) for c in outcome.candidates or []]
        return ambiguous_answer(outcome.api or "", outcome.args, _searched_text(outcome.args), [i for i in ids if i])
    if outcome.kind == NOT_FOUND:
        return not_found_answer(outcome.api or "", outcome.args, _searched_text(outcome.args))
    return None


def clarification_matches(expected: Mapping[str, Any], outcome: Outcome, key: str | None = None) -> bool:
    """Whether a run's outcome is the clarification `expected` (see the module docstring)."""
    if not is_clarification(expected) or outcome.kind != expected["kind"] or outcome.api != expected["api"]:
        return False
    searched = normalize(str(expected["searched"]))
    if searched not in {normalize(v) for v in outcome.args.values() if isinstance(v, str)}:
        return False
    if outcome.kind == AMBIGUOUS:
        found = sorted(str(record_id(c, key)) for c in outcome.candidates or [])
        return found == sorted(map(str, expected.get("candidates") or []))
    return True


def reproduces(expected: Any, run: Any, fuzzy: Collection[str] | None = None) -> bool:
    """Whether a sandbox run (`ExecutionResult`) reproduces a triplet's answer: the same value,
    or, for a clarification, the same outcome read from its call trace."""
    if is_clarification(expected):
        return clarification_matches(expected, analyse(run.trace, run.ok, run.result, fuzzy))
    return bool(run.ok) and answers_match(expected, run.result)


# --- ground truth from the environment --------------------------------------------------------


def namesakes(env: Any, api: str, param: str, name: str) -> tuple[str, list[dict[str, Any]]] | None:
    """(name field, records) of every entity the environment's search `api` finds by exactly `name`
    (its `param` alone, compared like names), or None when the search may have cut the list: it
    returned as many such records as a clarification lists (MAX_CANDIDATES), or nothing."""
    found = env.call(api, **{param: name})
    records = [r for r in found if isinstance(r, dict)] if isinstance(found, list) else []
    target = normalize(name)
    for field in name_fields(records):
        same = [r for r in records if isinstance(r.get(field), str) and normalize(r[field]) == target]
        if same:
            if len(same) >= MAX_CANDIDATES:
                return None
            return field, same
    return None


def ambiguous_among(records: list[dict[str, Any]], field: str, narrowing: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The namesakes a question still leaves open when it also gives `narrowing` (an
    organisation, an interest), by soay/outcomes.py's rule: those that agree with all of it, or
    all of them when none does; None when fewer than two are namesakes or exactly one agrees."""
    if len(records) < 2:
        return None
    wanted = [v for v in narrowing.values() if isinstance(v, str) and v.strip()]
    agreeing = [r for r in records if all(agrees(v, r, field) for v in wanted)]
    if len(agreeing) == 1:
        return None
    return agreeing or records


# --- making the questions ----------------------------------------------------------------------

# How a clause naming the organisation comes out of a phrasing, per language, in order. A phrasing
# that still holds the placeholder afterwards (or matches a REFUSE pattern) has no unqualified form.
_UNQUALIFY: dict[str, dict[str, list[tuple[str, str]]]] = {
    "organization": {
        "en": [
            (r"\bAt \{organization\}, (\{?)(\w)", "UPPER"),
            (r"\{organization\}'s \{name\}", "{name}"),
            (r"; they are at \{organization\}", ""),
            (r",? (?:who is |now |working )?(?:at|from|of) \{organization\}", ""),
            (r" \(\{organization\}\)", ""),
            (r", \{organization\}(?=[,.?!;:]|$)", ""),
            (r"\{name\} \{organization\}", "{name}"),
        ],
        "zh": [
            (r"\{organization\}(?:那边|那位)?的?(学者)?\{name\}", r"\1{name}"),
            (r"\{organization\} \{name\}", "{name}"),
            (r"\{name\}（\{organization\}）", "{name}"),
            (r"\{name\}现在在\{organization\}，", "{name}"),
            (r"\{name\}是\{organization\}的学者", "{name}是一位学者"),
            (r"\{name\}在\{organization\}(?:工作|任职|任教)?(?=[，的主做担是])", "{name}"),
            (r"\{name\}在\{organization\}(?=[^\s，。？])", "{name}"),
        ],
    },
}
_REFUSE = {"en": [r"\bworks? (?:at|for) \{organization\}", r"\bbased at \{organization\}"], "zh": []}


def unqualified(template: str, language: str, drop: Collection[str]) -> str | None:
    """The phrasing without the clauses that give the `drop` placeholders (an organisation), or
    None when it has no clean form without them."""
    text = template
    for placeholder in drop:
        token = "{" + placeholder + "}"
        if token not in text:
            continue
        rules = _UNQUALIFY.get(placeholder, {}).get(language)
        if not rules or any(re.search(p, text) for p in _REFUSE.get(language, [])):
            return None
        for pattern, replacement in rules:
            if replacement == "UPPER":  # "At {organization}, how many ..." -> "How many ..."
                text = re.sub(pattern, lambda m: m.group(1) + (m.group(2) if m.group(1) else m.group(2).upper()), text)
            else:
                text = re.sub(pattern, replacement, text)
        if token in text:
            return None
    return " ".join(text.split())


def fabricate(text: str, donor: str, rng: random.Random) -> str:
    """A name (or title) in the corpus's style that nobody carries: each word of `text` keeps its
    first half and takes the second half of a word of `donor` ("Wei Zhang" with "Kenji Tanaka":
    "Weji Zhaaka"); initials, small words ("of", "for") and what is not a letter stay, and each
    part of a hyphenated word is spliced on its own. Whether the environment finds it must still
    be checked."""
    donors = [w for w in re.findall(r"[^\W\d_]{2,}", donor)] or ["ex"]

    def splice(m: re.Match[str]) -> str:
        word = m.group()
        if len(word) <= 3 and word.islower():
            return word
        other = rng.choice(donors)
        new = word[: max(1, (len(word) + 1) // 2)] + other[len(other) // 2 :].lower()
        return new + rng.choice("aeiou") if normalize(new) == normalize(word) else new

    return re.sub(r"[^\W\d_]{2,}", splice, text)
