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
* **not found, closest**: a search found results, but the one the program took does not carry the
  searched name (a search ranks "Yang He" first for "Kaiming He": its citations are not Kaiming
  He's) or the organisation the call gave. The run's answer would be about the wrong entity, so
  the outcome is "not_found" (clients keep working) with `closest` set and the search's results
  as the candidates, the closest ones to ask about instead (`find_wrong_entity`).
* **explanation**: each call (consecutive calls of one API merged) with what it was asked, how
  much it found and what the program took from it, for the next call or for the answer.

Plain Python on JSON-compatible values: the serving answer stage and SoAyEval both use it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from soay.environment.text import normalize

Kind = Literal["answer", "not_found", "ambiguous"]

MAX_EXPLANATION_STEPS = 12
"""Steps listed in an explanation; the rest are merged into the last one."""
MAX_CANDIDATES = 10
EMPTY_RESULTS = (None, "", [], {})


@dataclass
class Outcome:
    """How a run turned out, for the person who asked.

    kind: "answer" (the run's result stands), "not_found" (a search matched nothing, or only
        others than the one asked for: see `closest`) or "ambiguous" (several entities carry the
        searched name).
    api / args: the search call that decided "not_found" or "ambiguous" (None for an answer).
    candidates: for "ambiguous", the namesakes as the search returned them (ids, names,
        organisations, interests...), best match first; for a "not_found" with `closest`, the
        search's results, the closest ones to the name asked for.
    explanation: the steps of the run, see `explain`.
    closest: True for a "not_found" whose search did find results, none of them the one asked for
        (the taken result carries neither the searched name nor the organisation given).
    """

    kind: Kind
    api: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    candidates: list[dict[str, Any]] | None = None
    explanation: list[dict[str, Any]] = field(default_factory=list)
    closest: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "api": self.api,
            "args": self.args,
            "candidates": self.candidates,
            "explanation": self.explanation,
            "closest": self.closest,
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


_WORD = re.compile(r"[^\W\d_]+")


def _acronym(text: str) -> str:
    """The letters a name is abbreviated by, casefolded: a capitalised word's initial, an
    upper-case word whole, small words left out ("Carnegie Mellon University" -> "cmu",
    "ETH Zurich" -> "ethz", "University of Illinois Urbana-Champaign" -> "uiuc"). A single
    written word is its own acronym ("CMU", "C.M.U." -> "cmu")."""
    if len(text.split()) == 1:
        return _norm(text).replace(" ", "")
    letters = [w if w.isupper() else w[0] for w in _WORD.findall(text) if w[0].isupper() and w != "The"]
    return normalize("".join(letters)) if len(letters) >= 2 else ""


def _abbreviates(argument: str, text: str) -> bool:
    """Whether two names of an organisation are one written short and one long ("CMU" and
    "Carnegie Mellon University", "ETH Zurich" and "Eidgenössische Technische Hochschule
    Zürich"). Two long names with one acronym must also share their spelled-out words, so that
    "Tsinghua University" is not "Tianjin University"."""
    ours = _acronym(argument)
    if len(ours) < 2 or ours != _acronym(text):
        return False
    if len(argument.split()) == 1 or len(text.split()) == 1:
        return True
    spelled = {_norm(w) for w in _WORD.findall(argument) if not w.isupper()}
    return spelled <= set(_norm(text).split())


def agrees(argument: str, record: Mapping[str, Any], skip: str) -> bool:
    """Whether a record agrees with a narrowing argument (an organisation, an interest): some
    field other than the matched name holds it, holds all its words, or is the same name written
    short or long (`_abbreviates`: people and programs write "CMU" as often as the full name)."""
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
        raw = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        if any(isinstance(v, str) and _abbreviates(argument, v) for v in raw):
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


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
MAX_NAME_WORDS = 6
"""Names matched word by word (in any order, with initials and joined parts) up to this length:
the matching tries arrangements, and a longer text is no name a person writes."""
MIN_TITLE_WORDS = 4
"""A searched title judged against the title found only from this many words on: a publication
search takes keywords too, and a few keywords need not be a title's words."""


def _is_name_param(key: str) -> bool:
    return key == "name" or key.endswith("_name")


def _is_title_param(key: str) -> bool:
    return key in ("title", "publication_info") or key.endswith(("_title", "_info"))


def _is_org_param(key: str) -> bool:
    return key in ("organization", "organisation", "affiliation") or key.endswith(("_organization", "_org"))


def _name_variants(name: str) -> list[list[str]]:
    """The searched name's normalised words, and the same with parts joined: the parts of one
    written word ("Soo-jin", "K.L.") freely, two separate words only where two words are left,
    so that "Soo Jin Kim" also reads "Soojin Kim" but "Yang He" never becomes "Yanghe"."""
    variants: list[list[str]] = [[]]
    for written in name.split():
        parts = _norm(written).split()
        forms = [parts, ["".join(parts)]] if len(parts) > 1 else [parts]
        variants = [v + f for v in variants for f in forms]
    joined = [v[:i] + [v[i] + v[i + 1]] + v[i + 2 :] for v in variants if len(v) > 2 for i in range(len(v) - 1)]
    return variants + joined


def _token_matches(searched: str, theirs: list[str]) -> bool:
    """One searched word against one or more adjacent words of a record's name: the same word
    (joined, for several), or an initial of it ("k" for "kaiming", "kaiming" for "k")."""
    joined = "".join(theirs)
    if searched == joined:
        return True
    return len(theirs) == 1 and (
        (len(searched) == 1 and joined.startswith(searched)) or (len(joined) == 1 and searched.startswith(joined))
    )


def _assign(searched: list[str], theirs: list[str], used: frozenset[int]) -> bool:
    """Whether each searched word matches its own run of the record's words (in any order)."""
    if not searched:
        return True
    head, rest = searched[0], searched[1:]
    for start in range(len(theirs)):
        for end in range(start + 1, min(start + 3, len(theirs)) + 1):
            span = set(range(start, end))
            if not span & used and _token_matches(head, theirs[start:end]) and _assign(rest, theirs, used | span):
                return True
    return False


def carries_name(searched: str, record_name: str) -> bool:
    """Whether a record's name is the searched name, as people write names: case, diacritics and
    word order aside ("WANG Lei" is "Lei Wang", "José Núñez" is "Jose Nunez"), initials for
    words ("Peter K.L. Wong" is "Peter K. L. Wong"), given names hyphenated, joined or apart
    ("Soo-jin", "Soojin", "Soo Jin"), and a partial name matching a whole one ("Tang" is carried
    by "Jie Tang"): every searched word matches a distinct word of the record's name. Middle
    initials a record leaves out may go unmatched where two whole words match ("Peter K.L. Wong"
    is "Wong, Peter"), not where one does ("K. He" is not "Yang He")."""
    theirs, ours = _norm(record_name).split(), _norm(searched).split()
    if len(theirs) > MAX_NAME_WORDS or len(ours) > MAX_NAME_WORDS:  # longer than names: the words suffice
        return set(ours) <= set(theirs)
    variants = _name_variants(searched)
    variants += [whole for v in variants if len(whole := [w for w in v if len(w) > 1]) >= 2 and len(whole) < len(v)]
    return any(_assign(v, theirs, frozenset()) for v in variants if len(v) <= len(theirs))


def _cjk_carries(searched: str, record: Mapping[str, Any]) -> bool | None:
    """For a name written in CJK characters: whether a field of the record holding CJK text (a
    `name_zh`) holds it; None when none does (a romanised record cannot be judged against it)."""
    wanted = _norm(searched).replace(" ", "")
    texts = [t.replace(" ", "") for v in record.values() for t in _texts(v) if _CJK.search(t)]
    return any(wanted in t for t in texts) if texts else None


def romanised_names(name: str) -> list[str]:
    """A Chinese name as its Latin-script forms, given name and surname ("欧阳明远" -> "Mingyuan
    Ouyang", "Yuan Ouyangming"): a one- and a two-character surname read by pypinyin. Names
    written in Chinese characters are searched in either script, and a record that carries only
    the Latin form is judged against these (tones and homophones aside, as pinyin writes them)."""
    from pypinyin import lazy_pinyin

    syllables = [s for s in lazy_pinyin(_norm(name).replace(" ", "")) if s.isascii() and s.isalpha()]
    if not 2 <= len(syllables) <= MAX_NAME_WORDS + 1:
        return []
    return [f"{''.join(syllables[k:]).title()} {''.join(syllables[:k]).title()}" for k in (1, 2) if k < len(syllables)]


def _cjk_org_carries(searched: str, record: Mapping[str, Any]) -> bool | None:
    """For an organisation written in CJK characters: whether a CJK field of the record other than
    a name holds all its characters, as short forms keep them ("清华" of 清华大学, "北航" of
    北京航空航天大学); None when the record has none (it cannot be judged)."""
    texts = [t for k, v in record.items() if not _is_name_param(k) and not k.startswith("name") for t in _texts(v) if _CJK.search(t)]
    wanted = set(_norm(searched).replace(" ", ""))
    return any(wanted <= set(t.replace(" ", "")) for t in texts) if texts else None


def _title_carries(searched: str, title: str) -> bool:
    """Whether a found title is the searched one: only a long searched text (MIN_TITLE_WORDS
    words) that shares fewer than half its words with the title is judged another title."""
    words = set(_norm(searched).split())
    return len(words) < MIN_TITLE_WORDS or 2 * len(words & set(_norm(title).split())) >= len(words)


def _carries(key: str, searched: str, record: Mapping[str, Any]) -> bool:
    """Whether a record the program took is what one search argument asked for (see
    `find_wrong_entity`); True where that cannot be judged."""
    if _CJK.search(searched):  # judged against the record's fields in CJK characters (name_zh, organization_zh)
        judged = _cjk_org_carries(searched, record) if _is_org_param(key) else _cjk_carries(searched, record)
        if judged is None and _is_name_param(key):  # a romanised record: its name read against the name's pinyin
            names = [v for k, v in record.items() if _is_name_param(k) and isinstance(v, str) and not _CJK.search(v)]
            judged = any(carries_name(r, n) for r in romanised_names(searched) for n in names) if names else None
        return True if judged is None else judged
    if _is_org_param(key):
        field = next((k for k in record if _is_org_param(k)), None)
        if field is not None and record[field] in EMPTY_RESULTS:
            return True  # the record says nothing of where it is
        return agrees(searched, record, next((k for k in record if _is_name_param(k)), ""))
    if _is_name_param(key):
        names = [v for k, v in record.items() if _is_name_param(k) and isinstance(v, str)]
        return not names or any(carries_name(searched, n) for n in names)
    titles = [v for k, v in record.items() if (k == "title" or k.endswith("_title")) and isinstance(v, str)]
    return not titles or any(_title_carries(searched, t) for t in titles)


def _taken_rows(call: dict[str, Any], later: list[dict[str, Any]], result: Any) -> set[int]:
    """The results of a search the program took, as `explain` says it: those whose fields later
    calls were given, else those the answer holds, else the first (`person_list[0]`)."""
    given = {repr(v) for c in later for v in (c.get("args") or {}).values()}
    taken = _fields_holding(call, given) if given else {}
    if not taken and result not in EMPTY_RESULTS:
        taken = _fields_holding(call, _atoms(result))
    return set[int]().union(*taken.values()) or {0}


def find_wrong_entity(
    trace: list[dict[str, Any]], fuzzy: Collection[str] | None = None, result: Any = None
) -> dict[str, Any] | None:
    """The first search call that found results none of which the program took is the one asked
    for: a taken result whose name does not carry the searched name (`carries_name`; a long
    searched title that shares less than half its words with the title found), or, for a name
    search that gave an organisation, whose organisation does not agree with it. None otherwise.

    A search ranks the closest names first when nobody carries the name ("Yang He" for "Kaiming
    He"): a program that takes the first result would answer about someone else."""
    for i, call in enumerate(trace):
        if not _is_fuzzy(call.get("api", ""), fuzzy) or "error" in call or not call.get("found"):
            continue
        items = call.get("items") or []
        args = _string_args(call.get("args") or {})
        named = any(_is_name_param(k) for k, _ in args)
        judged = [(k, v) for k, v in args if _is_name_param(k) or _is_title_param(k) or (named and _is_org_param(k))]
        rows = _taken_rows(call, trace[i + 1 :], result)
        taken = [items[r] for r in sorted(rows) if r < len(items) and isinstance(items[r], dict)]
        if judged and taken and not any(all(_carries(k, v, record) for k, v in judged) for record in taken):
            return call
    return None


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
    wrong = find_wrong_entity(trace, fuzzy, result if ok else None)
    if wrong is not None:
        closest = [r for r in wrong.get("items") or [] if isinstance(r, dict)][:MAX_CANDIDATES]
        return Outcome("not_found", wrong["api"], dict(wrong.get("args") or {}), closest or None, steps, closest=True)
    return Outcome("answer", explanation=steps)
