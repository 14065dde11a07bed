"""The SoAyEval job: planner + coder through vLLM offline inference, code in the sandbox, scores.

The planner's decoding is constrained to the solution library (vLLM structured outputs), so it
can only name solutions that exist; the coder gets the nearest training example of the chosen
solution as its exemplar, and the string arguments of its search calls are snapped to spans of
the question (seeds/001 §4.4). Everything the model writes runs in the sandbox, never here.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from soay.agent import PLAN_MAX_TOKENS, code_max_tokens, finish_code, solution_choices
from soay.dataset import iter_triplets
from soay.domains import get_domain
from soay.evaluation import Case, categorise, evaluate, markdown_table
from soay.mentions import mask_question
from soay.prompts import END, coder_prompt, planner_prompt
from soay.settings import SandboxSettings
from soay.splits import held_out
from soay.triplets import Triplet
from training.generate import sandbox_for
from training.paraphrases import paraphrased_triplets

_WORD = re.compile(r"\w+")


class ExemplarIndex:
    """Training examples per solution; the one whose masked question shares most words with a
    query's is its exemplar.

    A lexical stand-in until the FAISS retriever serves exemplars; on masked questions it finds
    the same phrasing with other entities, which is what the coder copies best.
    """

    def __init__(self, triplets: list[Triplet]) -> None:
        self.by_solution: dict[str, dict[frozenset[str], tuple[str, str]]] = defaultdict(dict)
        for t in triplets:  # one exemplar per phrasing is enough
            self.by_solution[t.solution].setdefault(_words(t.query), (t.query, t.code))

    def exemplar_for(self, query: str, solution: str) -> tuple[str, str] | None:
        candidates = self.by_solution.get(solution)
        if not candidates:
            return None
        words = _words(query)
        return max(candidates.items(), key=lambda c: len(words & c[0]) / (len(words | c[0]) or 1))[1]


def _words(query: str) -> frozenset[str]:
    return frozenset(_WORD.findall(mask_question(query).lower()))


def predict(model_dir: Path, queries: list[str], solutions: list[str], exemplars: ExemplarIndex, max_model_len: int = 1024) -> list[tuple[str, str]]:
    """(solution, coder completion) for each query, greedy, in two batched vLLM passes."""
    from vllm import LLM, SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    # On the CPU build "gpu_memory_utilization" is the share of host memory vLLM reserves; a
    # small model needs little, and the sandbox and Ray share the machine.
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    llm = LLM(
        model=str(model_dir), dtype="float32", enforce_eager=True, max_model_len=max_model_len, seed=0,
        gpu_memory_utilization=0.3,
    )
    plan = SamplingParams(temperature=0.0, max_tokens=PLAN_MAX_TOKENS, structured_outputs=StructuredOutputsParams(choice=solutions))
    planned = [o.outputs[0].text.strip() for o in llm.generate([planner_prompt(q) for q in queries], plan, use_tqdm=False)]
    # the mention markers are special tokens: keep them in the text, finish_code restores them
    write = SamplingParams(temperature=0.0, max_tokens=code_max_tokens(max_model_len), stop=[END], skip_special_tokens=False)
    prompts = [coder_prompt(q, s, exemplars.exemplar_for(q, s)) for q, s in zip(queries, planned)]
    return list(zip(planned, [o.outputs[0].text for o in llm.generate(prompts, write, use_tqdm=False)]))


def run_eval(
    model_dir: Path, dataset_root: Path, db_path: Path, domain_name: str, out_dir: Path,
    limit: int | None = None, paraphrases: Path | None = None,
) -> dict[str, Any]:
    """Score the model on the dataset's test split (and, given a paraphrase file, on hand-written
    phrasings of the same test cases); writes eval.json and eval.md to `out_dir`."""
    domain = get_domain(domain_name)
    test = list(iter_triplets(dataset_root, split="test"))[:limit]
    if not test:
        raise ValueError(f"dataset at {dataset_root} has no test triplets")
    sets = {"test": test}
    if paraphrases:
        sets["paraphrases"] = paraphrased_triplets(paraphrases, test)
    cases = [t for ts in sets.values() for t in ts]
    exemplars = ExemplarIndex(list(iter_triplets(dataset_root, split="train")))
    solutions = solution_choices(domain.library)
    started = time.perf_counter()
    predictions = [
        (solution, finish_code(code, t.query, domain.spec))
        for t, (solution, code) in zip(cases, predict(model_dir, [t.query for t in cases], solutions, exemplars))
    ]
    generation_s = time.perf_counter() - started
    with sandbox_for(domain_name, db_path, SandboxSettings()) as sandbox:
        results = sandbox.run_batch([code for _, code in predictions])
    scored = [
        Case(t.hops, t.language, t.solution, t.code, t.answer, solution, code, r.ok, r.result)
        for t, (solution, code), r in zip(cases, predictions, results)
    ]
    report = evaluate(scored[: len(test)], set(domain.spec.api_names))
    report["meta"] = {
        "model": str(model_dir),
        "test_cases": len(test),
        "invalid_solutions": sum(s not in solutions for s, _ in predictions),
        "generation_seconds": round(generation_s, 1),
        "queries_per_second": round(len(cases) / generation_s, 1),
    }
    markdown = markdown_table(report)
    if paraphrases:
        report["paraphrases"] = evaluate(scored[len(test) :], set(domain.spec.api_names))
        report["paraphrases"]["planner_accuracy"] = _planner_accuracy(sets["paraphrases"], predictions[len(test) :])
        markdown += "\n### Hand-written paraphrases\n\n" + markdown_table(report["paraphrases"])
    report["planner_accuracy"] = _planner_accuracy(test, predictions[: len(test)])
    # phrasings seen in training vs held out of it: how much of the score is generalisation
    report["by_phrasing"] = {}
    for name, wanted in (("seen", False), ("held_out", True)):
        picked = [i for i, t in enumerate(test) if _held_out_phrasing(t, domain) == wanted]
        if picked:
            part = evaluate([scored[i] for i in picked], set(domain.spec.api_names))
            report["by_phrasing"][name] = {
                **part["all"], "score": part["score"],
                "planner_accuracy": _planner_accuracy([test[i] for i in picked], [predictions[i] for i in picked])["all"],
            }
    markdown += "\nBy phrasing: " + "; ".join(
        f"{k}: n {v['n']}, ACC {v['ACC']}, Score {v['score']}, planner {v['planner_accuracy']}%" for k, v in report["by_phrasing"].items()
    ) + "\n"
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "predictions.jsonl").open("w") as f:  # every case, for error analysis
        for t, c, r in zip(cases, scored, results):
            row = {"id": t.id, "query": t.query, "gold_solution": t.solution, "solution": c.solution, "category": categorise(c),
                   "code": c.code, "error": r.error, "answer": c.answer, "gold_answer": t.answer}
            f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    (out_dir / "eval.json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    (out_dir / "eval.md").write_text(markdown)
    return report


def _held_out_phrasing(t: Triplet, domain: Any) -> bool:
    """Whether the test case's phrasing never appears in training (template ids end in language/index)."""
    _, language, index = t.template_id.rsplit("/", 2)
    return held_out(domain.combinations.by_id[t.combination.id], language, int(index))


def _planner_accuracy(cases: list[Triplet], predictions: list[tuple[str, str]]) -> dict[str, float]:
    """Share of right solutions per language: the planner's part of the score on its own."""
    right: dict[str, list[bool]] = defaultdict(list)
    for t, (solution, _) in zip(cases, predictions):
        right[t.language].append(solution == t.solution)
        right["all"].append(solution == t.solution)
    return {k: round(100 * sum(v) / len(v), 2) for k, v in sorted(right.items())}
