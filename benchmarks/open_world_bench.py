"""Open-world benchmark: trained heads models on questions about scholars and papers the corpus never had.

    .venv/bin/python benchmarks/open_world_bench.py --model heads=data/aminer/runs/demo/model [--split validation|test]

The set lives in benchmarks/open_world/: entities.yaml (made-up scholars and publications) and
validation.jsonl / test.jsonl (questions about them, in English and Chinese, with their intent,
arguments as written and the kind of answer expected). Tune on validation (the default); read test
once per candidate, for reports.

What it does:
1. copies the corpus of the settings (`--corpus`, by default <data.root>/aminer/corpus.sqlite) and
   writes the set's entities into the copy (soay/environment/insert_entities.py), then reads them back
   through the APIs (searchPerson by each name, getCoauthors, getPersonPubs, getPublication);
2. builds each question's gold program (soay/code_builder.py, the gold intent with the gold
   arguments) and runs it in the sandbox on the copy: its result is the gold answer;
3. for each model, predicts as SoAyEval does for heads (training/evaluate.py predict_with_heads: the
   planner's combination or out of scope, the coder's nearest verified program, its markers filled
   from the question) and runs the program in the sandbox on the same copy.

Per question it scores:
- solution: the predicted combination is the gold intent (for an `unsupported` question: refused).
  An intent the library does not have is never right;
- arguments (questions expecting an answer only): the program's literal string arguments (to API
  calls, and the value a branch tests) equal the gold arguments' values as a set, after stripping;
- answer: `answer` questions, the run's result matches the gold program's (soay/answers.py);
  `not_found` questions, the run's outcome (soay/outcomes.py) is not_found, i.e. the service says it
  knows nobody by that name rather than describing someone else; `unsupported`, refused;
- refusals: questions the planner refused as out of scope.

Writes (merging) `--out` (benchmarks/results/open_world.json):
`{"<split>": {"en": {solution, arguments, answer, refusals, n}, "zh": {...}}, "designs": [...]}`,
the split's entry being the last run's, each design entry (replaced by name and split) with the
breakdowns per kind, intent and style, the gold programs' problems and the insertion's check; and
the failures of each design beside it (open_world-failures-<split>-<name>.jsonl).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from soay.answers import answers_match  # noqa: E402
from soay.code_builder import build_code  # noqa: E402
from soay.domains import Domain, get_domain  # noqa: E402
from soay.environment.insert_entities import Entities, Inserted, check_entities, insert_entities, load_entities  # noqa: E402
from soay.heads import HEADS_FILE, OUT_OF_SCOPE  # noqa: E402
from soay.outcomes import analyse, fuzzy_apis  # noqa: E402
from soay.sandbox.runner import ExecutionResult  # noqa: E402

SET_DIR = ROOT / "benchmarks" / "open_world"
OUT = ROOT / "benchmarks" / "results" / "open_world.json"
UNSUPPORTED = "unsupported"
LANGUAGES = ("en", "zh")
METRICS = ("solution", "arguments", "answer", "refusals", "n")
RUN_BATCH = 25
"""Programs per sandbox round trip: a progress line after each."""

Predictor = Callable[[Path, list[str], Domain], tuple[list[tuple[str, str, str]], frozenset[str]]]


class Question(BaseModel):
    """One row of validation.jsonl / test.jsonl."""

    model_config = ConfigDict(extra="ignore")

    id: str
    language: Literal["en", "zh"]
    question: str = Field(min_length=1)
    intent: str
    arguments: dict[str, str] = Field(default_factory=dict)
    scholar: str | None = None
    publication: str | None = None
    style: str = ""
    expected_kind: Literal["answer", "not_found", "unsupported"]

    @field_validator("arguments", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        """An argument written as a number in the file (a year) is the text the question has."""
        if not isinstance(value, dict):
            return value
        return {k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for k, v in value.items()}


def load_questions(path: Path) -> list[Question]:
    rows = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(Question.model_validate_json(line))
            except ValueError as e:
                raise ValueError(f"{path}:{n}: {e}") from None
    return rows


def progress(message: str) -> None:
    print(f"[open-world] {message}", flush=True)


# ------------------------------------------------------------------------------ the corpus copy


def prepare_corpus(corpus: Path, entities: Entities, copy: Path) -> tuple[Inserted, dict[str, Any]]:
    """Copy `corpus` to `copy`, write the entities into it and read them back through the APIs."""
    if not corpus.is_file():
        raise FileNotFoundError(f"no corpus at {corpus}: build one with `soay corpus build` or pass --corpus")
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.unlink(missing_ok=True)
    source, target = sqlite3.connect(f"{corpus.resolve().as_uri()}?mode=ro", uri=True), sqlite3.connect(copy)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    inserted = insert_entities(copy, entities)
    return inserted, check_entities(copy, entities, inserted)


# ------------------------------------------------------------------------------ gold programs


@dataclass
class Gold:
    program: str | None
    """None for an unsupported question, or an intent the library does not have."""
    ok: bool = False
    result: Any = None
    outcome: str | None = None
    problem: str | None = None
    """Why the gold program does not say what the question means (it fails, finds someone else...)."""


def gold_program(q: Question, domain: Domain) -> tuple[str | None, str | None]:
    """(program, problem): the code builder's program of the gold intent with the gold arguments."""
    if q.intent == UNSUPPORTED:
        return None, None
    combination = domain.combinations.by_id.get(q.intent)
    if combination is None:
        return None, f"intent {q.intent!r} is not in the library"
    values = {k: v.strip() for k, v in q.arguments.items()}
    # what every phrasing of the intent gives (a combination with optional filters needs fewer than its inputs)
    required = getattr(combination, "required_placeholders", combination.placeholders)
    if missing := sorted(required - set(values)):
        return None, f"arguments lack {', '.join(missing)} for {q.intent}"
    try:
        return build_code(domain.spec, combination, domain.combinations.solution(combination), values), None
    except (KeyError, ValueError) as e:
        return None, f"no gold program for {q.intent} with {sorted(values)}: {e}"


def judge_gold(
    q: Question, gold: Gold, run: ExecutionResult, inserted: Inserted, fuzzy: frozenset[str], group: bool = False
) -> Gold:
    """The gold run's result, and a problem when it does not answer about the question's entity
    (not checked for a `group` intent, whose search finds a whole group: the scholars at an organisation)."""
    gold.ok, gold.result = run.ok, run.result
    gold.outcome = analyse(run.trace, run.ok, run.result, fuzzy).kind
    first = next((c for c in run.trace if c.get("api") in fuzzy), None)
    items = (first or {}).get("items") or []
    top = items[0] if items and isinstance(items[0], dict) else {}
    if q.expected_kind == "not_found":
        if gold.outcome != "not_found":
            gold.problem = f"the name matches someone: {first['api']} puts {top.get('name') or top.get('title')!r} first" if top else \
                f"the gold program's outcome is {gold.outcome}"
        return gold
    if not run.ok:
        gold.problem = f"the gold program fails: {run.error}"
    elif gold.outcome != "answer":
        gold.problem = f"the gold program's outcome is {gold.outcome}"
    elif group:
        pass
    elif first and first["api"] == "searchPerson" and q.scholar:
        wanted = inserted.person_ids.get(q.scholar)
        if wanted is None:
            gold.problem = f"scholar {q.scholar} is not in entities.yaml"
        elif top.get("person_id") != wanted:
            gold.problem = f"searchPerson puts {top.get('name')!r} ({top.get('organization')}) first, not {q.scholar}"
    elif first and first["api"] == "searchPublication" and q.publication:
        wanted = inserted.publication_ids.get(q.publication)
        if wanted is None:
            gold.problem = f"publication {q.publication} is not in entities.yaml"
        elif top.get("pub_id") != wanted:
            gold.problem = f"searchPublication puts {top.get('title')!r} first, not {q.publication}"
    return gold


def _is_group(domain: Domain, intent: str) -> bool:
    return bool(getattr(domain.combinations.by_id.get(intent), "group", False))


def run_programs(sandbox: Any, codes: list[str | None], label: str) -> list[ExecutionResult]:
    """Each program's run (a skipped one, None or empty, fails with "no program"), with progress lines."""
    results = [ExecutionResult(ok=False, error="no program", error_type="no_result") for _ in codes]
    todo = [i for i, c in enumerate(codes) if c]
    started = time.perf_counter()
    for start in range(0, len(todo), RUN_BATCH):
        batch = todo[start : start + RUN_BATCH]
        for i, r in zip(batch, sandbox.run_batch([codes[i] for i in batch])):
            results[i] = r
        done = start + len(batch)
        progress(f"{label}: {done}/{len(todo)} programs run ({done / max(time.perf_counter() - started, 1e-9):.1f}/s)")
    return results


# ------------------------------------------------------------------------------ scoring


def literal_arguments(code: str, api_names: Iterable[str], fixed: frozenset[str] = frozenset()) -> set[str] | None:
    """The string literals a program gives: arguments of API calls, and values a branch tests
    (`'deep learning' in item['interests']`), stripped; the library's own literals (`fixed`,
    "advisor") left out. None when the program does not parse."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    apis = set(api_names)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in apis:
            found |= {a.value.strip() for a in [*node.args, *(k.value for k in node.keywords)]
                      if isinstance(a, ast.Constant) and isinstance(a.value, str)}
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
                found.add(node.left.value.strip())
    return found - fixed


def library_literals(domain: Domain) -> frozenset[str]:
    """Values the library's programs write themselves ("advisor", "student"), not taken from a question."""
    return frozenset(c.answer.where.literal for c in domain.combinations if c.answer.where and c.answer.where.literal)


@dataclass
class Judged:
    question: Question
    combination: str
    program: str
    run: ExecutionResult
    outcome: str | None
    solution: bool
    arguments: bool | None
    """None for a question not expecting an answer (not_found, unsupported)."""
    answer: bool

    @property
    def refused(self) -> bool:
        return self.combination == OUT_OF_SCOPE

    @property
    def wrong(self) -> list[str]:
        return [k for k in ("solution", "arguments", "answer") if getattr(self, k) is False]


def judge(q: Question, gold: Gold, combination: str, program: str, run: ExecutionResult, domain: Domain, fixed: frozenset[str]) -> Judged:
    fuzzy = frozenset(fuzzy_apis(domain.spec))
    refused = combination == OUT_OF_SCOPE
    outcome = analyse(run.trace, run.ok, run.result, fuzzy).kind if program and not refused else None
    if q.expected_kind == UNSUPPORTED or q.intent == UNSUPPORTED:
        return Judged(q, combination, program, run, outcome, refused, None, refused)
    solution = combination == q.intent and q.intent in domain.combinations.by_id
    if q.expected_kind == "not_found":
        return Judged(q, combination, program, run, outcome, solution, None, outcome == "not_found")
    literals = literal_arguments(program, domain.spec.api_names, fixed - set(q.arguments.values())) if program else None
    arguments = literals is not None and literals == {v.strip() for v in q.arguments.values()}
    answer = gold.program is not None and gold.ok and run.ok and bool(program) and answers_match(gold.result, run.result)
    return Judged(q, combination, program, run, outcome, solution, arguments, answer)


def _share(flags: list[bool]) -> float | None:
    return round(100 * sum(flags) / len(flags), 2) if flags else None


def summary(judged: list[Judged]) -> dict[str, Any]:
    return {
        "solution": _share([j.solution for j in judged]),
        "arguments": _share([j.arguments for j in judged if j.arguments is not None]),
        "answer": _share([j.answer for j in judged]),
        "refusals": _share([j.refused for j in judged]),
        "n": len(judged),
    }


def breakdown(judged: list[Judged], key: Callable[[Judged], str]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[Judged]] = defaultdict(list)
    for j in judged:
        groups[key(j)].append(j)
    return {k: summary(v) for k, v in sorted(groups.items())}


def report(judged: list[Judged]) -> dict[str, Any]:
    """Per language (the headline), all together, and per expected kind, gold intent and style."""
    by_language = {lang: summary([j for j in judged if j.question.language == lang]) for lang in LANGUAGES}
    in_scope = [j for j in judged if j.question.expected_kind != UNSUPPORTED]
    return {
        **by_language,
        "all": summary(judged),
        "false_refusals": _share([j.refused for j in in_scope]),
        "by_kind": breakdown(judged, lambda j: j.question.expected_kind),
        "by_intent": breakdown(judged, lambda j: j.question.intent),
        "by_style": breakdown(judged, lambda j: j.question.style or "-"),
    }


def failure_row(j: Judged, gold: Gold) -> dict[str, Any]:
    q = j.question
    return {
        "id": q.id, "language": q.language, "style": q.style, "expected_kind": q.expected_kind, "question": q.question,
        "wrong": j.wrong,
        "gold": {"intent": q.intent, "arguments": q.arguments, "scholar": q.scholar, "publication": q.publication,
                 "program": gold.program, "answer": gold.result, "outcome": gold.outcome, "problem": gold.problem},
        "predicted": {"combination": j.combination, "program": j.program, "answer": j.run.result, "outcome": j.outcome,
                      "error": j.run.error if j.program and not j.refused else None},
    }


# ------------------------------------------------------------------------------ the run


def predict_heads(model_dir: Path, queries: list[str], domain: Domain) -> tuple[list[tuple[str, str, str]], frozenset[str]]:
    from training.evaluate import predict_with_heads

    return predict_with_heads(model_dir, queries, domain)


def evaluate_model(
    name: str, model_dir: Path, questions: list[Question], golds: list[Gold], sandbox: Any, domain: Domain,
    predict: Predictor = predict_heads,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(design entry, failure rows) of one model on the questions."""
    from soay.agent import finish_code

    started = time.perf_counter()
    progress(f"{name}: encoding and planning {len(questions)} questions ({model_dir})")
    planned, vocabulary = predict(model_dir, [q.question for q in questions], domain)
    programs = [finish_code(code, q.question, domain.spec, vocabulary) if code and c != OUT_OF_SCOPE else ""
                for q, (c, _, code) in zip(questions, planned)]
    predicted = time.perf_counter()
    rate = len(questions) / max(predicted - started, 1e-9)
    progress(f"{name}: planned {len(questions)} questions in {predicted - started:.1f} s ({rate:.1f}/s, engine start included)")
    runs = run_programs(sandbox, programs, f"{name}")
    ran = time.perf_counter()
    fixed = library_literals(domain)
    judged = [judge(q, g, c, p, r, domain, fixed) for q, g, (c, _, _), p, r in zip(questions, golds, planned, programs, runs)]
    entry = {
        "name": name, "model": str(model_dir), **report(judged),
        "seconds": {"plan": round(predicted - started, 1), "run": round(ran - predicted, 1)},
        "seconds_per_100_questions": round(100 * (ran - started) / max(len(questions), 1), 1),
    }
    failures = [failure_row(j, g) for j, g in zip(judged, golds) if j.wrong]
    return entry, failures


def merge_results(out: Path, split: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Merge this run into `out`: the split's headline is the last entry's, design entries are
    replaced by (name, split)."""
    data = json.loads(out.read_text()) if out.is_file() else {}
    designs = [d for d in data.get("designs", []) if (d.get("name"), d.get("split")) not in {(e["name"], split) for e in entries}]
    designs += [{"name": e["name"], "split": split, **{k: v for k, v in e.items() if k != "name"}} for e in entries]
    data[split] = {lang: {k: entries[-1][lang][k] for k in METRICS} for lang in LANGUAGES}
    data["designs"] = designs
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
    return data


def failures_path(out: Path, split: str, name: str) -> Path:
    return out.with_name(f"{out.stem}-failures-{split}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)}.jsonl")


def run_bench(
    models: list[tuple[str, Path]], split: str = "validation", set_dir: Path = SET_DIR, corpus: Path | None = None,
    out: Path = OUT, keep_corpus: Path | None = None, predict: Predictor = predict_heads,
) -> dict[str, Any]:
    from soay.settings import Settings
    from training.generate import sandbox_for

    settings = Settings()
    corpus = Path(corpus or settings.data.corpus_path("aminer"))
    domain = get_domain("aminer")
    questions = load_questions(set_dir / f"{split}.jsonl")
    if not questions:
        raise ValueError(f"{set_dir / f'{split}.jsonl'} holds no questions")
    if split == "test":
        progress("reading the test split: once per candidate, for reports (tune on validation)")
    entities = load_entities(set_dir / "entities.yaml")
    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="open-world-"))
    try:
        copy = keep_corpus or work / "corpus.sqlite"
        inserted, check = prepare_corpus(corpus, entities, copy)
        progress(f"corpus copy {copy}: {check['scholars']} scholars, {check['publications']} publications, "
                 f"{inserted.fillers} filler papers inserted; "
                 f"searchPerson finds {check.get('found_by_name', 0)}/{check.get('names', 0)} names; "
                 f"{len(check['problems'])} problems")
        for line in check["problems"]:
            progress(f"  insertion problem: {line}")
        prepared = time.perf_counter()
        fuzzy = frozenset(fuzzy_apis(domain.spec))
        with sandbox_for(domain, copy, settings.sandbox.model_copy(update={"api_backend": "inprocess"})) as sandbox:
            built = [gold_program(q, domain) for q in questions]
            gold_runs = run_programs(sandbox, [p for p, _ in built], "gold")
            golds = [Gold(p, problem=problem) for p, problem in built]
            golds = [judge_gold(q, g, r, inserted, fuzzy, _is_group(domain, q.intent)) if g.program else g
                     for q, g, r in zip(questions, golds, gold_runs)]
            problems = [{"id": q.id, "problem": g.problem} for q, g in zip(questions, golds) if g.problem]
            progress(f"gold: {len(questions)} questions, {len(problems)} with a problem (written in each design entry)")
            entries = []
            for name, model_dir in models:
                entry, failures = evaluate_model(name, model_dir, questions, golds, sandbox, domain, predict)
                path = failures_path(out, split, name)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("".join(json.dumps(f, ensure_ascii=False, default=str) + "\n" for f in failures))
                entry.update({
                    "questions": len(questions), "failures": str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path),
                    "gold_problems": problems, "corpus": str(corpus), "insertion": {**check, "notes": inserted.notes},
                    "prepare_seconds": round(prepared - started, 1),
                    "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                    "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
                })
                entries.append(entry)
                progress(f"{name} on {split}: " + "; ".join(
                    f"{lang} solution {entry[lang]['solution']} %, arguments {entry[lang]['arguments']} %, "
                    f"answer {entry[lang]['answer']} %, "
                    f"refusals {entry[lang]['refusals']} % (n {entry[lang]['n']})" for lang in LANGUAGES)
                    + f"; {entry['seconds_per_100_questions']} s per 100 questions; failures in {path}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return merge_results(out, split, entries)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", required=True, help="NAME=MODEL_DIR, a `soay train` heads model (repeatable)")
    parser.add_argument("--split", default="validation", choices=["validation", "test"],
                        help="validation while tuning; test once per candidate, for reports")
    parser.add_argument("--set-dir", type=Path, default=SET_DIR, help="entities.yaml and <split>.jsonl (default benchmarks/open_world)")
    parser.add_argument("--corpus", type=Path, help="the corpus to copy (default: the settings', <data.root>/aminer/corpus.sqlite)")
    parser.add_argument("--out", type=Path, default=OUT, help="results JSON to merge into (failures are written beside it)")
    parser.add_argument("--keep-corpus", type=Path, help="write the corpus copy with the entities here and keep it")
    args = parser.parse_args(argv)
    models = []
    for item in args.model:
        name, sep, model = item.partition("=")
        if not sep or not name or not model:
            parser.error(f"--model {item!r}: expected NAME=MODEL_DIR")
        if not (Path(model) / HEADS_FILE).is_file():
            parser.error(f"--model {item!r}: {model} holds no heads ({HEADS_FILE}); train one with `soay train`")
        models.append((name, Path(model)))
    return run_bench(models, args.split, args.set_dir, args.corpus, args.out, args.keep_corpus)


if __name__ == "__main__":
    main()
