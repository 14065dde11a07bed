"""From a served request's log record to a training triplet: the decisions, with no Kafka in them.

The dataset-enlargement job (training/enlarge.py) re-runs a logged program in the sandbox and
asks this module three questions:

1. Did the re-run verify? It must succeed, leave a non-empty result, and that result must be the
   logged one (`soay.answers.answers_match`: same normalisation as triplet verification), and its
   API calls must walk the logged solution (start at its head, call exactly its APIs).
2. Which combination of the library is the program an instance of? The program is compared with
   the library's own program for every combination of the logged solution (`build_code` with a
   marker in each placeholder): the same tokens up to the values of string literals, and every
   literal that is not a placeholder identical. The literals standing where the placeholders
   stand are the triplet's inputs. A program may also leave out optional head inputs (serving's
   `unmask_code` drops a keyword argument the question gives no value for: "coauthors of Wei
   Zhang" searches by name alone): such a program is matched against the combination's program
   without them, after every full program of the solution. A program whose head search takes
   other filters than the combination's program (serving gives the search every filter the
   question has, `with_question_filters`: "Anna Schmidt at ETH, the NLP researcher" searches by
   name, organisation and interest for any intent) is matched with its head call's arguments set
   aside: the rest must be the combination's program, and the head's arguments a set the search
   takes that holds the combination's own non-optional inputs. The served coder writes the library's programs with the
   question's mentions in them, so its programs match; a program written otherwise (other
   variable names, another shape) may be a new intent and is not labelled by guessing: it goes
   to review.
3. Which entity is it about? The first entity reference the program passed to a second API; for
   one-hop solutions, the first record the head API returns for the logged arguments (what the
   program read its answer from). The entity decides the split hash, so a question about a test
   entity can be kept out of training (SoAyEval's test split must stay unseen).

Identity: a triplet made from request `r` has id `log-<hash(r)>`, so a replay recognises it; two
records ask the same thing when their normalised query and solution agree (`dedupe_key`).
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass
from itertools import combinations as subsets
from typing import Any

from soay.answers import normalise
from soay.code_builder import build_code
from soay.combinations import Combination, CombinationSet
from soay.environment.base import Environment
from soay.solutions import parse_solution
from soay.spec import ApiSpec
from soay.triplets import CombinationRef, Triplet

LOG_SOURCE = "log"
_SLOT = "\x00slot\x00"
_CJK = re.compile(r"[\u3400-\u9fff]")


def normalise_query(query: str) -> str:
    """Case and spacing do not make a question new."""
    return " ".join(query.split()).casefold()


def dedupe_key(query: str, solution: str) -> str:
    """Two records with this key teach the planner and the coder the same thing."""
    text = normalise_query(query) + "\x00" + " -> ".join(parse_solution(solution))
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def log_triplet_id(request_id: str) -> str:
    """The stable id of the triplet made from one request: a replay makes the same id."""
    return "log-" + hashlib.blake2b(request_id.encode(), digest_size=8).hexdigest()


def query_language(query: str, logged: str = "") -> str:
    """The logged language, else zh when the question has CJK characters, else en."""
    return logged or ("zh" if _CJK.search(query) else "en")


def is_empty(result: Any) -> bool:
    """A result that answers nothing: None, blank text, an empty list or record."""
    return _empty(normalise(result))


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, (str, list, dict)) and not value)


def rerun_problem(ok: bool, logged_result: Any, rerun_result: Any) -> str | None:
    """Why a re-run does not verify the logged record, or None when it does.

    exec_error: the re-run failed; empty_result: it (or the log) answered nothing, which proves
    nothing; mismatch: it answered something other than what the service logged."""
    if not ok:
        return "exec_error"
    rerun, logged = normalise(rerun_result), normalise(logged_result)
    if _empty(rerun) or _empty(logged):
        return "empty_result"
    if rerun != logged:
        return "mismatch"
    return None


def path_problem(solution: tuple[str, ...], called: list[str]) -> str | None:
    """path_mismatch when the calls made do not walk `solution` (start at its head, call exactly
    its APIs: loops repeat their hop, so the set is compared), else None."""
    if not called or called[0] != solution[0] or set(called) != set(solution):
        return "path_mismatch"
    return None


@dataclass(frozen=True)
class Match:
    """The combination a program instantiates, with the literals standing in its placeholders."""

    combination: Combination
    values: dict[str, str]


@dataclass(frozen=True)
class _Template:
    combination: Combination
    shape: str
    strings: tuple[str, ...]


@dataclass(frozen=True)
class _HeadTemplate:
    """A combination's program with its head search's arguments set aside."""

    combination: Combination
    shape: str
    strings: tuple[str, ...]
    params: frozenset[str]
    """Parameters the head search takes."""
    needed: frozenset[str]
    """Head parameters every program of the combination passes (its inputs that are no filter)."""


class CombinationMatcher:
    """Recognises library programs: one template per combination, compared by syntax tree."""

    def __init__(self, combinations: CombinationSet) -> None:
        self.spec = combinations.spec
        self.templates: dict[tuple[str, ...], list[_Template]] = {}
        reduced: list[_Template] = []
        for c in combinations:
            solution = combinations.solution(c)
            for inputs in self._asked(c):
                asked = c if inputs == c.inputs else c.model_copy(update={"inputs": inputs})
                values = {p: f"{_SLOT}{p}" for p in asked.placeholders}
                shape, strings = code_shape(build_code(self.spec, asked, solution, values))
                template = _Template(c, shape, strings)
                if inputs == c.inputs:
                    self.templates.setdefault(c.apis, []).append(template)
                else:
                    reduced.append(template)
        for t in reduced:  # tried after every full program of the solution
            self.templates.setdefault(t.combination.apis, []).append(t)
        self.searches = frozenset(a.name for a in self.spec.apis if a.kind == "fuzzy")
        self.by_head: dict[tuple[str, ...], list[_HeadTemplate]] = {}
        for c in combinations:
            head = self.spec.api(c.apis[0])
            params = {p.name for p in head.params}
            split = _split_head(build_code(self.spec, c, combinations.solution(c), {p: f"{_SLOT}{p}" for p in c.placeholders}),
                                self.searches)
            if split is None:
                continue
            rest, _ = split
            shape, strings = code_shape(rest)
            needed = frozenset({p.name for p in head.params if p.required} | (set(c.inputs) - set(c.filters)) & params)
            self.by_head.setdefault(c.apis, []).append(_HeadTemplate(c, shape, strings, frozenset(params), needed))

    def _asked(self, c: Combination) -> list[tuple[str, ...]]:
        """The head inputs a program of `c` may pass: all of them, then every smaller set that
        keeps the head's required parameters and at least one input (largest first)."""
        head = self.spec.api(c.apis[0])
        required = {p.name for p in head.params if p.required}
        out = [c.inputs]
        for size in range(len(c.inputs) - 1, 0, -1):
            out += [kept for kept in subsets(c.inputs, size) if required <= set(kept)]
        return out

    def match(self, solution: tuple[str, ...], code: str) -> Match | None:
        """The combination of `solution` whose library program `code` is an instance of, or None."""
        candidates = self.templates.get(solution)
        if not candidates:
            return None
        try:
            shape, strings = code_shape(code)
        except SyntaxError:
            return None
        for t in candidates:
            if t.shape != shape or len(t.strings) != len(strings):
                continue
            values: dict[str, str] = {}
            for expected, actual in zip(t.strings, strings):
                if expected.startswith(_SLOT):
                    name = expected[len(_SLOT):]
                    if values.setdefault(name, actual) != actual:
                        break
                elif expected != actual:
                    break
            else:
                return Match(t.combination, values)
        return self._match_head(solution, code)

    def _match_head(self, solution: tuple[str, ...], code: str) -> Match | None:
        """The match with the head search's arguments set aside (see the module docstring, 2)."""
        split = _split_head(code, self.searches)
        if split is None:
            return None
        rest, head_args = split
        try:
            shape, strings = code_shape(rest)
        except SyntaxError:
            return None
        for t in self.by_head.get(solution, []):
            if t.shape != shape or len(t.strings) != len(strings) or not t.needed <= set(head_args) <= t.params:
                continue
            values: dict[str, str] = {}
            for expected, actual in zip(t.strings, strings):
                if expected.startswith(_SLOT):
                    if values.setdefault(expected[len(_SLOT):], actual) != actual:
                        break
                elif expected != actual:
                    break
            else:
                for param, value in head_args.items():
                    values.setdefault(param, value)  # a branch's value of the same name keeps its own
                return Match(t.combination, values)
        return None


def _split_head(code: str, searches: frozenset[str]) -> tuple[str, dict[str, str]] | None:
    """(the program with its first search call's arguments removed, those arguments), or None when
    it has no such call or the call passes anything but string keywords."""
    if not searches:
        return None
    call = re.search(rf"\b(?:{'|'.join(map(re.escape, sorted(searches)))})\([^()]*\)", code)
    if call is None:
        return None
    try:
        node = ast.parse(call.group(0), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Call) or node.args or any(
        k.arg is None or not isinstance(k.value, ast.Constant) or not isinstance(k.value.value, str) for k in node.keywords
    ):
        return None
    name = call.group(0).split("(", 1)[0]
    return code[: call.start()] + f"{name}()" + code[call.end():], {k.arg: k.value.value for k in node.keywords}


_TOKEN = re.compile(
    r"""(?P<string>'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")"""
    r"|(?P<comment>#[^\n]*)|(?P<newline>\n[ \t]*)|(?P<space>[ \t]+)|(?P<other>\w+|.)",
    re.DOTALL,
)


def code_shape(code: str) -> tuple[str, tuple[str, ...]]:
    """A program with its string literals lifted out, and those literals in order: two programs
    with the same shape are the same program up to the values of their literals.

    One regular-expression pass (a tenth of the cost of parsing): tokens are compared as written,
    blank space and comments aside, indentation kept. Anything the pass could read differently
    from Python (a triple-quoted or prefixed string, a continued line) only makes a program unlike
    every template, never like the wrong one. Raises SyntaxError on an unterminated literal.
    """
    parts: list[str] = []
    strings: list[str] = []
    for m in _TOKEN.finditer(code.strip("\n") + "\n"):
        kind = m.lastgroup
        if kind == "string":
            token = m.group()
            strings.append(ast.literal_eval(token) if "\\" in token else token[1:-1])
            parts.append("\x01")
        elif kind == "newline":
            if not parts:
                continue  # comment lines before the first statement
            if parts[-1].startswith("\n"):
                parts[-1] = m.group()  # blank lines: the last indentation counts
            else:
                parts.append(m.group())
        elif kind == "other":
            if m.group() in "'\"":
                raise SyntaxError("unterminated string literal")
            parts.append(m.group())
    return "\x02".join(parts), tuple(strings)


def entity_of(spec: ApiSpec, calls: list[dict[str, Any]], env: Environment | None) -> str:
    """The entity a verified program is about (see the module docstring); "" when unknown."""
    for call in calls[1:]:
        api = spec.by_name.get(call.get("api", ""))
        if api is None:
            continue
        for param in api.params:
            value = call.get("args", {}).get(param.name)
            if param.ref is not None and value is not None:
                return str(value)
    if env is None or not calls:
        return ""
    head = spec.by_name.get(calls[0].get("api", ""))
    if head is None:
        return ""
    try:
        found = env.call(head.name, **calls[0].get("args", {}))
    except Exception:  # noqa: BLE001 - the program's own arguments; any refusal means "unknown"
        return ""
    first = found[0] if isinstance(found, list) and found else found
    key = spec.entities[head.entity].key
    return str(first[key]) if isinstance(first, dict) and first.get(key) is not None else ""


def log_triplet(
    request_id: str, domain: str, query: str, language: str, solution: str, code: str, answer: Any, match: Match, entity_id: str,
    split: str = "train",
) -> Triplet:
    """The triplet of a verified, matched log record (code_source log; split train, or the held-out
    slice of person-labelled questions, soay/splits.py LOGGED)."""
    c = match.combination
    return Triplet(
        id=log_triplet_id(request_id),
        domain=domain,
        query=query,
        language=query_language(query, language),
        solution=" -> ".join(parse_solution(solution)),
        combination=CombinationRef(id=c.id, inputs=list(c.inputs), output=c.output, kind=c.kind),
        code=code,
        inputs=match.values,
        answer=answer,
        template_id=f"{c.id}/{LOG_SOURCE}",
        hops=c.hops,
        split=split,
        entity_id=entity_id,
        code_source=LOG_SOURCE,
    )
