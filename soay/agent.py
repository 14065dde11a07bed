"""The model-facing steps of a SoAy agent that evaluation and serving share.

How the planner's decoding is bounded, how much the coder may write, and how a coder completion
becomes a program: kept here once so that SoAyEval scores exactly what the service runs.
"""

from __future__ import annotations

import ast
import math
import re
from statistics import fmean

from soay.literals import snap_literals
from soay.mentions import FAMILIES, mask_code, mention_markers
from soay.prompts import END, restore_code
from soay.sandbox.policy import PolicyViolation, check_code
from soay.solutions import SolutionLibrary
from soay.spec import Api, ApiSpec
from soay.tool_weights import ToolWeights


def solution_choices(library: SolutionLibrary) -> list[str]:
    """What the planner may choose from: exactly the library's solutions."""
    return [str(s) for s in library]


PLAN_CANDIDATES = 3
"""How many retrieved solutions the planner chooses among: the right one is among the first three
for 93 % of English questions phrased unlike any training question (benchmarks/REPORT-model.md)."""


def candidate_solutions(
    hit_solutions: list[str], library_solutions: list[str], k: int = PLAN_CANDIDATES, weights: ToolWeights | None = None
) -> list[str]:
    """The planner's choices for a question: the first `k` distinct solutions of its retrieved
    exemplars, best first; the whole library when retrieval found none (an empty index).

    With tool-graph `weights` (Cai's thesis §3.5, learnt from served traffic) the retrieved
    solutions are ranked by retrieval rank times the path's prior: a solution retrieved at rank r
    (0-based, first appearance) scores prior / (r + 1), so a better-supported call path can pass
    one retrieved just before it, or enter the top `k` from just below, but weak evidence never
    outweighs much better retrieval. Weights that observed nothing give every path prior 1.0 and
    leave the ranking as it is without them."""
    found = [s for s in dict.fromkeys(hit_solutions) if s in library_solutions]
    if weights is not None:
        score = {s: weights.path_prior(s) / (rank + 1) for rank, s in enumerate(found)}
        found = sorted(found, key=lambda s: -score[s])  # stable: ties keep retrieval order
    return found[:k] or list(library_solutions)


def exemplar_for(solution: str, hits: list[dict]) -> tuple[str, str] | None:
    """The coder's exemplar: (question, code) of the nearest retrieved exemplar of `solution`."""
    return next(((h["query"], h["code"]) for h in hits if h.get("solution") == solution and h.get("code")), None)


CODE_CANDIDATES = 4
"""How many distinct programs of the chosen solution the coder's likelihood ranks."""


def candidate_programs(solution: str, hits: list[dict], k: int = CODE_CANDIDATES) -> list[str]:
    """The masked programs of the retrieved exemplars of `solution`, distinct, nearest first: what
    the coder ranks by its likelihood, so its output is always a program the library verified."""
    programs = (mask_code(h["code"], h["query"]).strip() for h in hits if h.get("solution") == solution and h.get("code"))
    return list(dict.fromkeys(programs))[:k]


def continuation_logprobs(token_ids: list[int], logprobs: list[dict | None], prefix_tokens: int) -> list[float]:
    """Log-likelihood of each token after a shared prefix (a candidate and its end marker), from
    vLLM prompt logprobs: how a model scores a closed set of candidates exactly, where
    constrained greedy decoding would commit to a shared first token before seeing the rest."""
    return [entry[token].logprob for token, entry in zip(token_ids[prefix_tokens:], logprobs[prefix_tokens:]) if entry]


def choose_program(candidates: list[str], token_logprobs: list[list[float]]) -> str:
    """The coder's pick among retrieved programs: the highest per-token likelihood, so programs of
    different lengths compare fairly."""
    return candidates[max(range(len(candidates)), key=lambda i: fmean(token_logprobs[i]) if token_logprobs[i] else -math.inf)]


PLAN_RANK_PRIOR = 0.5
"""Nats of log-likelihood a candidate solution gives up per place it stands lower in the retrieval
order, so that the planner and the retriever vote together. Set once (not tuned on the test split);
benchmarks/REPORT-model.md compares it with the planner alone and the retriever alone."""


def choose_solution(candidates: list[str], token_logprobs: list[list[float]]) -> str:
    """The planner's pick among the retrieved candidate solutions (best retrieved first): the
    whole sequence's likelihood, so a one-hop solution is not lost to a longer one that merely
    shares its first API, plus the retrieval-order prior."""
    return candidates[max(range(len(candidates)), key=lambda i: sum(token_logprobs[i]) - PLAN_RANK_PRIOR * i)]


def code_max_tokens(max_model_len: int) -> int:
    """The coder's budget: half the context, the other half being its prompt and exemplar."""
    return max_model_len // 2


def finish_code(completion: str, query: str, spec: ApiSpec, vocabulary: frozenset[str] = frozenset()) -> str:
    """The program in a coder completion: text before the end marker, its head search given every
    filter the question has (`with_question_filters`), the mention markers replaced by the
    question's mentions, and any search argument the model wrote itself snapped to a span of the
    question (RESTful-Llama §4.4)."""
    program = with_question_filters(completion.split(END, 1)[0], query, spec, vocabulary)
    return snap_literals(restore_code(program, query, vocabulary), query, spec)


def head_search_line(example_query: str, example_code: str, query: str, spec: ApiSpec) -> str:
    """The first line of the example's program, its head search, masked and given the question's
    filters: the line a small base most often gets wrong (a name pasted into an id, prose after
    it), written for it so that it writes the rest after the example's pattern. Empty when the
    example does not start with a search."""
    first = mask_code(example_code, example_query).strip().splitlines()[:1]
    if not first or not any(f"{a.name}(" in first[0] for a in spec.apis if a.kind == "fuzzy"):
        return ""
    return with_question_filters(first[0], query, spec) + "\n"


FAMILY_PARAMS = {
    "e": ("name", "title"),
    "o": ("organization", "affiliation", "institution"),
    "v": ("interest", "field", "topic"),
}
"""The search parameter a mention of each marker family fills (soay/mentions.py): a name or title,
an organisation, a research field; the first of these the search API has."""
_MARKER = re.compile(r"<\|[eov]\d+\|>")


def family_param(api: Api, family: str) -> str | None:
    """The parameter of search `api` that a mention of `family` fills, or None when it has none."""
    names = {p.name for p in api.params}
    return next((p for p in FAMILY_PARAMS.get(family, ()) if p in names), None)


def with_question_filters(code: str, query: str, spec: ApiSpec, vocabulary: frozenset[str] = frozenset()) -> str:
    """`code` (masked: mention markers for literals) with its first search call carrying every
    filter the question gives, and no more of them than the question has values for.

    The program is copied from the nearest training question, which may have given other filters:

    * a marker of a condition (the organisation co-authors must be at, the field they must work
      on) that the question lacks takes a mention of its family the question has and the program
      does not use, else the one a search filter of that family uses, which the search then gives
      up: "Who at Peking University has worked with Wei Zhang?" copied from a program whose search
      took the scholar's organisation <|o1|> and whose condition <|o2|> filters co-authors by
      Peking University and Wei Zhang alone searched;
    * each marker family the question has and the call lacks becomes a keyword argument (e: the
      name, o: the organisation, v: the research field, FAMILY_PARAMS; only parameters the search
      API has), with the family's first marker the program does not already use: the program
      searched by a name and an organisation, this question gives a name and a research field, so
      the search gets `interest=<|v1|>` too (and unmask_code drops the organisation it lacks).

    Code without a search call it can read is returned as it is."""
    searches = [a.name for a in spec.apis if a.kind == "fuzzy"]
    call = re.search(rf"\b(?:{'|'.join(map(re.escape, searches))})\([^()]*\)", code) if searches else None
    if call is None:
        return code
    text = _MARKER.sub(lambda m: f"_mk_{m.group(0)[2:-2]}", call.group(0))  # markers are no Python: read each as a name
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return code
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or any(k.arg is None for k in node.keywords):
        return code

    def source(part: ast.AST) -> str:
        return re.sub(r"_mk_([eov]\d+)", r"<|\1|>", ast.get_source_segment(text, part) or "")

    api = spec.api(node.func.id)
    args = [source(a) for a in node.args]
    keywords = {k.arg: source(k.value) for k in node.keywords}
    markers = mention_markers(query, vocabulary)
    asked = set(markers.values())
    literal = {m for mention, m in markers.items() if repr(mention) in code or f'"{mention}"' in code}
    before, after = code[: call.start()], code[call.end() :]
    changed = False
    for missing in dict.fromkeys(_MARKER.findall(before + after)):
        if missing in asked or missing[2] == "e":
            continue
        used = set(_MARKER.findall(before + after)) | set(_MARKER.findall(" ".join([*args, *keywords.values()]))) | literal
        free = [m for m in _family(markers.values(), missing[2]) if m not in used]
        donor = next((p for p, v in keywords.items() if v in asked and v[2] == missing[2] and _MARKER.fullmatch(v)), None)
        if free:
            value = free[0]
        elif donor is not None:
            value = keywords.pop(donor)
        else:
            continue
        before, after, changed = before.replace(missing, value), after.replace(missing, value), True
    passed = {p.name for p in api.params[: len(args)]} | set(keywords)
    used = set(_MARKER.findall(before + after)) | set(_MARKER.findall(" ".join([*args, *keywords.values()]))) | literal
    for family in FAMILIES:
        param = family_param(api, family)
        free = [m for m in _family(markers.values(), family) if m not in used]
        if param is not None and param not in passed and free:
            keywords[param], changed = free[0], True
    if not changed:
        return code
    return f"{before}{api.name}({', '.join([*args, *(f'{k}={v}' for k, v in keywords.items())])}){after}"


def _family(markers, family: str) -> list[str]:
    """The markers of `family`, by number."""
    return sorted((m for m in markers if m[2] == family), key=lambda m: int(m[3:-2]))


def code_problem(code: str, spec: ApiSpec) -> str | None:
    """Why the sandbox would refuse `code` (its AST allow-list), or None when it would run it."""
    try:
        check_code(code, spec.api_names)
    except PolicyViolation as violation:
        return violation.message
    return None
