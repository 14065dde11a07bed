"""SoAyEval (the SoAy paper §6.1.1) and the code metrics of the GraphQL function-calling paper
(README, References).

Each test case is judged on what the model produced (a solution and code) and what the code
returned in the sandbox:

  EE  the code did not run (policy violation, exception, timeout, no result);
  EM  the solution is the ground truth's and the answer is right;
  DS  the answer is right through a different solution;
  WS  the answer is wrong and so is the solution;
  WC  the solution is right but the code computes a wrong answer.

ACC = EM + DS; Score = (1·ACC₁ + 2·ACC₂ + 3·ACC₃) / 6 over one-, two- and three-hop cases.

A case whose gold answer is a clarification (a name nobody or several entities carry,
soay/clarifications.py) is answered right when the run's outcome, read from its call trace by
soay/outcomes.py as the served answer reads it, has the same kind, search and candidates: EM or
DS by the solution, else WC or WS; EE only when the run failed with no such outcome (a program that
takes the first result of an empty search fails, and that failure is its right answer).

The code metrics read both programs statically: every API call with its arguments, where an
argument that comes from an earlier call is written as that call's API and the key read from it
(`$searchPerson.person_id`), so variable names do not matter (the GraphQL paper's "standardisation").
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from soay.answers import answers_match
from soay.clarifications import clarification_matches, is_clarification
from soay.outcomes import analyse
from soay.solutions import parse_solution

CATEGORIES = ("EM", "DS", "WS", "WC", "EE")
HOP_WEIGHTS = {1: 1, 2: 2, 3: 3}


@dataclass(frozen=True)
class Case:
    """One judged prediction."""

    hops: int
    language: str
    gold_solution: str
    gold_code: str
    gold_answer: Any
    solution: str
    code: str
    ok: bool
    """Whether the predicted code ran to a result in the sandbox."""
    answer: Any = None
    trace: list[dict[str, Any]] | None = None
    """The run's call trace (`ExecutionResult.trace`): what a clarification case is judged on."""
    fuzzy: frozenset[str] | None = None
    """The spec's search APIs (`fuzzy_apis(spec)`); by default, those named search*."""


def same_solution(a: str, b: str) -> bool:
    try:
        return parse_solution(a) == parse_solution(b)
    except ValueError:
        return False


def categorise(case: Case) -> str:
    """The SoAyEval category of one case."""
    if is_clarification(case.gold_answer):
        outcome = analyse(case.trace or [], case.ok, case.answer, case.fuzzy)
        right = clarification_matches(case.gold_answer, outcome)
        if not right and not case.ok and outcome.kind == "answer":
            return "EE"
    elif not case.ok:
        return "EE"
    else:
        right = answers_match(case.gold_answer, case.answer)
    right_solution = same_solution(case.solution, case.gold_solution)
    if right:
        return "EM" if right_solution else "DS"
    return "WC" if right_solution else "WS"


# --- code metrics ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    api: str
    args: tuple[tuple[str, str], ...]
    """(parameter, standardised value), sorted by parameter."""
    depends_on: frozenset[int]
    """Indexes of earlier calls whose results flow into this call's arguments."""


def extract_calls(code: str, api_names: set[str]) -> list[Call] | None:
    """The API calls of `code` in source order, or None when it does not parse."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    return _CallCollector(api_names).collect(tree)


class _CallCollector(ast.NodeVisitor):
    """Walks statements in order, tracking which calls each variable's value comes from."""

    def __init__(self, api_names: set[str]) -> None:
        self.api_names = api_names
        self.calls: list[Call] = []
        self.origin: dict[str, frozenset[int]] = {}

    def collect(self, tree: ast.Module) -> list[Call]:
        self.visit(tree)
        return self.calls

    def _sources(self, node: ast.AST) -> frozenset[int]:
        """Calls whose results `node` reads (through variables or directly)."""
        found: set[int] = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in self.origin:
                found |= self.origin[sub.id]
        return frozenset(found)

    def _bind(self, target: ast.AST, sources: frozenset[int]) -> None:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                self.origin[sub.id] = sources

    def _standardise(self, node: ast.AST) -> str:
        if isinstance(node, ast.Constant):
            return repr(node.value)
        sources = self._value_sources(node)
        if not sources:
            return ast.unparse(node)
        keys = [s.value for s in ast.walk(node) if isinstance(s, ast.Constant) and isinstance(s.value, str)]
        apis = sorted({self.calls[i].api for i in sources})
        return "$" + "|".join(apis) + "".join(f".{k}" for k in keys)

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)  # nested calls first, as Python evaluates them
        if isinstance(node.func, ast.Name) and node.func.id in self.api_names:
            args = tuple(sorted((kw.arg or "**", self._standardise(kw.value)) for kw in node.keywords))
            args += tuple((f"#{i}", self._standardise(a)) for i, a in enumerate(node.args))
            deps = frozenset().union(*(self._value_sources(a) for a in [*node.args, *(k.value for k in node.keywords)]))
            self.calls.append(Call(node.func.id, args, deps))
            node._soay_call = len(self.calls) - 1  # type: ignore[attr-defined]

    def _value_sources(self, value: ast.AST) -> frozenset[int]:
        """The calls a value comes straight from: the outermost API calls inside it if any (a
        call's result replaces its inputs), else whatever its variables come from."""
        direct = {n._soay_call for n in ast.walk(value) if hasattr(n, "_soay_call")}  # type: ignore[attr-defined]
        if direct:
            inner = set().union(*(self.calls[i].depends_on for i in direct))
            return frozenset(direct - inner)
        return self._sources(value)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        sources = self._value_sources(node.value)
        for target in node.targets:
            self._bind(target, sources)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        self._bind(node.target, self._value_sources(node.value) | self._sources(node.target))

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)
        self._bind(node.target, self._value_sources(node.iter))
        for stmt in [*node.body, *node.orelse]:
            self.visit(stmt)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self.visit(node.iter)
        self._bind(node.target, self._value_sources(node.iter))
        for cond in node.ifs:
            self.visit(cond)


def connected_subsequences(calls: list[Call]) -> set[tuple[str, ...]]:
    """Every chain of dependent calls from a call with no inputs from others to one whose
    result feeds no other call, as API names."""
    children: dict[int, list[int]] = defaultdict(list)
    for i, c in enumerate(calls):
        for d in c.depends_on:
            children[d].append(i)
    chains: set[tuple[str, ...]] = set()

    def walk(i: int, path: tuple[str, ...]) -> None:
        path = path + (calls[i].api,)
        if not children[i]:
            chains.add(path)
        for j in children[i]:
            walk(j, path)

    for i, c in enumerate(calls):
        if not c.depends_on:
            walk(i, ())
    return chains


@dataclass(frozen=True)
class CodeScores:
    arg_full: float
    arg_functions: tuple[int, int]
    """(matched, total) ground-truth calls, to average over functions rather than snippets."""
    seq_full: float
    seq_connected: float


def code_scores(gold: str, predicted: str, api_names: set[str]) -> CodeScores:
    """The GraphQL paper's four code metrics for one snippet."""
    gold_calls = extract_calls(gold, api_names) or []
    pred_calls = extract_calls(predicted, api_names)
    if pred_calls is None:
        return CodeScores(0.0, (0, len(gold_calls)), 0.0, 0.0)
    remaining = list(pred_calls)
    matched = 0
    for g in gold_calls:
        hit = next((p for p in remaining if p.api == g.api and set(g.args) <= set(p.args)), None)
        if hit is not None:
            remaining.remove(hit)
            matched += 1
    return CodeScores(
        arg_full=float(matched == len(gold_calls)),
        arg_functions=(matched, len(gold_calls)),
        seq_full=float([c.api for c in gold_calls] == [c.api for c in pred_calls]),
        seq_connected=float(connected_subsequences(gold_calls) == connected_subsequences(pred_calls)),
    )


# --- reports --------------------------------------------------------------------------------


@dataclass
class _Tally:
    n: int = 0
    categories: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    arg_full: float = 0.0
    arg_fn: list[int] = field(default_factory=lambda: [0, 0])
    seq_full: float = 0.0
    seq_connected: float = 0.0

    def add(self, category: str, scores: CodeScores) -> None:
        self.n += 1
        self.categories[category] += 1
        self.arg_full += scores.arg_full
        self.arg_fn[0] += scores.arg_functions[0]
        self.arg_fn[1] += scores.arg_functions[1]
        self.seq_full += scores.seq_full
        self.seq_connected += scores.seq_connected

    def summary(self) -> dict[str, float]:
        pct = {k: round(100 * v / self.n, 2) if self.n else 0.0 for k, v in self.categories.items()}
        return {
            "n": self.n,
            **pct,
            "ACC": round(pct["EM"] + pct["DS"], 2),
            "arg_match_full": round(self.arg_full / self.n, 4) if self.n else 0.0,
            "arg_match_functions": round(self.arg_fn[0] / self.arg_fn[1], 4) if self.arg_fn[1] else 0.0,
            "seq_match_full": round(self.seq_full / self.n, 4) if self.n else 0.0,
            "seq_match_connected": round(self.seq_connected / self.n, 4) if self.n else 0.0,
        }


def evaluate(cases: list[Case], api_names: set[str]) -> dict[str, Any]:
    """SoAyEval over cases: per hop, per language, overall, and the weighted Score."""
    tallies: dict[str, _Tally] = defaultdict(_Tally)
    for case in cases:
        category = categorise(case)
        scores = code_scores(case.gold_code, case.code, api_names)
        keys = ["all", f"hop{case.hops}", f"lang:{case.language}", f"lang:{case.language}/hop{case.hops}"]
        if is_clarification(case.gold_answer):
            keys.append(f"kind:{case.gold_answer['kind']}")  # clarification cases on their own as well
        for key in keys:
            tallies[key].add(category, scores)
    report = {key: t.summary() for key, t in sorted(tallies.items())}
    report["score"] = score(report)
    for lang in sorted({c.language for c in cases}):
        report[f"score:{lang}"] = score({k.split("/", 1)[1]: v for k, v in report.items() if k.startswith(f"lang:{lang}/")})
    return report


def score(per_hop: dict[str, Any]) -> float:
    """The hop-weighted Score of SoAy over the hops present."""
    present = {h: per_hop[f"hop{h}"]["ACC"] for h in HOP_WEIGHTS if f"hop{h}" in per_hop}
    if not present:
        return 0.0
    return round(sum(HOP_WEIGHTS[h] * acc for h, acc in present.items()) / sum(HOP_WEIGHTS[h] for h in present), 2)


def markdown_table(report: dict[str, Any]) -> str:
    """The report as SoAy's table (categories and ACC per hop) with the code metrics."""
    cols = ["n", *CATEGORIES, "ACC", "arg_match_full", "arg_match_functions", "seq_match_full", "seq_match_connected"]
    rows = [k for k in report if isinstance(report[k], dict) and "n" in report[k]]
    lines = ["| split | " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) + 1)]
    lines += [f"| {k} | " + " | ".join(str(report[k][c]) for c in cols) + " |" for k in rows]
    scores = ", ".join(f"{k} {v}" for k, v in report.items() if k.startswith("score"))
    return "\n".join(lines) + f"\n\nScore: {scores}\n"
