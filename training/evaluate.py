"""The SoAyEval job: planner + coder through vLLM offline inference, code in the sandbox, scores.

The same path as the served agent: the retriever finds the question's nearest training
exemplars (masked questions); the planner chooses among their solutions by likelihood, so it only
names solutions of the library; the coder gets the nearest
exemplar of the chosen solution, writes mention markers where literals go, and they are restored
from the question (soay/agent.py). Everything the model writes runs in the sandbox, never here.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

from soay.agent import (
    candidate_programs, candidate_solutions, choose_program, choose_solution, code_max_tokens, continuation_logprobs, exemplar_for, finish_code,
    solution_choices,
)
from soay.dataset import iter_triplets
from soay.domains import Domain, get_domain
from soay.evaluation import Case, categorise, evaluate, markdown_table
from soay.heads import HEADS_FILE, OUT_OF_SCOPE, Heads
from soay.mentions import mask_question
from soay.outcomes import fuzzy_apis
from soay.prompts import CODER_STOP, coder_prompt, planner_prompt, question_text, target
from soay.question_encoder import BASE_LINK
from soay.settings import SandboxSettings
from soay.splits import held_out
from soay.tool_weights import ToolWeights, load_tool_weights
from soay.triplets import Triplet
from training.generate import sandbox_for
from training.offline import encode, encoder, offline_llm, sentence_encoder
from training.paraphrases import paraphrased_triplets


class Exemplars:
    """The retriever over the training split, built in memory: what the served agent retrieves,
    so the eval scores the same planning and coding path (retriever/, masked questions)."""

    def __init__(self, triplets: list[Triplet], depth: int = 20) -> None:
        from retriever.documents import exemplar_documents
        from retriever.embeddings import Embedder
        from retriever.index import RetrieverIndex

        embedder = Embedder()
        self.index = RetrieverIndex(embedder.dim, embedder.name, embedder=embedder)
        self.index.add(exemplar_documents(triplets))
        self.depth = depth

    def hits(self, queries: list[str]) -> list[list[dict[str, Any]]]:
        vectors = self.index.embedder.encode([mask_question(q) for q in queries])
        return [[h.to_dict() for h in found] for found in self.index.search_vectors(vectors, self.depth, "exemplar")]


def predict(
    model_dir: Path, queries: list[str], solutions: list[str], exemplars: Exemplars, max_model_len: int = 1024, rank_programs: bool = True,
    weights: ToolWeights | None = None,
) -> list[tuple[str, str]]:
    """(solution, coder completion) for each query, in batched vLLM passes.

    The planner scores the solutions of the question's nearest exemplars (soay.agent.choose_solution),
    ordered with the call-path `weights` learnt from served traffic when there are some;
    the coder ranks the retrieved programs of the chosen solution, or writes greedily, with the
    nearest exemplar of that solution in its prompt.
    """
    from vllm import SamplingParams

    hits = exemplars.hits(queries)
    choices = [candidate_solutions([h["solution"] for h in found], solutions, weights=weights) for found in hits]
    with offline_llm(model_dir, max_model_len=max_model_len) as llm:
        scores = _likelihoods(llm, [planner_prompt(q) for q in queries], choices)
        planned = [choose_solution(c, s) for c, s in zip(choices, scores)]
        prompts = [coder_prompt(q, s, exemplar_for(s, found)) for q, s, found in zip(queries, planned, hits)]
        if rank_programs:
            candidates = [candidate_programs(s, found) for s, found in zip(planned, hits)]
            scores = _likelihoods(llm, prompts, candidates)
            programs = [choose_program(cs, s) if cs else "" for cs, s in zip(candidates, scores)]
            return list(zip(planned, programs))
        # the mention markers are special tokens: keep them in the text, finish_code restores them
        write = SamplingParams(temperature=0.0, max_tokens=code_max_tokens(max_model_len), stop=CODER_STOP, skip_special_tokens=False)
        return list(zip(planned, [o.outputs[0].text for o in llm.generate(prompts, write, use_tqdm=False)]))


def _likelihoods(llm: Any, prompts: list[str], candidates: list[list[str]]) -> list[list[list[float]]]:
    """For each prompt, the model's token log-likelihoods of each of its candidates (what
    soay.agent's choose_solution and choose_program decide on), in one batched pass."""
    from vllm import SamplingParams

    tokenizer = llm.get_tokenizer()
    flat = [(i, c) for i, cs in enumerate(candidates) for c in cs]
    outputs = llm.generate([prompts[i] + target(c) for i, c in flat], SamplingParams(max_tokens=1, prompt_logprobs=0), use_tqdm=False)
    scores: list[list[list[float]]] = [[] for _ in prompts]
    prefixes = [len(tokenizer(p)["input_ids"]) for p in prompts]
    for (i, _), out in zip(flat, outputs):
        scores[i].append(continuation_logprobs(out.prompt_token_ids, out.prompt_logprobs, prefixes[i]))
    return scores


def predict_with_heads(model_dir: Path, queries: list[str], domain: Any, batch_size: int = 64) -> tuple[list[tuple[str, str, str]], frozenset[str]]:
    """(combination id or out_of_scope, solution, masked program) for each query: the base's
    features of the question, the planner head's combination, the coder's nearest verified program
    of that combination (soay/heads.py), as the service runs them."""
    heads = Heads.load(model_dir)
    with encoder(model_dir / BASE_LINK) as llm:
        features = encode(llm, queries, batch_size, desc="eval: encode", vocabulary=heads.vocabulary,
                          sentences=sentence_encoder(heads.sentence_encoder))
    plans = [label for label, _ in heads.plan(features, [question_text(q, heads.vocabulary) for q in queries])]
    programs = heads.programs(features, plans)
    solutions = ["" if c == OUT_OF_SCOPE else str(domain.combinations.solution(domain.combinations.by_id[c])) for c in plans]
    return [(c, s, p[0] if p else "") for c, s, p in zip(plans, solutions, programs)], heads.vocabulary


def run_eval(
    model_dir: Path, dataset_root: Path, db_path: Path, domain: Domain | str, out_dir: Path,
    limit: int | None = None, paraphrases: Path | None = None, split: str = "test", out_of_scope: Path | None = None,
) -> dict[str, Any]:
    """Score the model on the dataset's `split` ("validation" while tuning, "test" for reports; given
    a paraphrase file, also on hand-written phrasings of the same cases); writes eval.json,
    eval.md and predictions.jsonl to `out_dir`. The headline is what a user meets: the Score on
    phrasings never seen in training and on the hand-written paraphrases, per language. Given an
    `out_of_scope` file ({en: [...], zh: [...]}, e.g. benchmarks/out_of_scope.yaml), also how many
    of those questions a heads model refuses, and how many in-scope cases it refuses wrongly.
    `domain` is a packaged domain's name or a Domain (an imported API, `soay.domains.domain_for`),
    whose environment runs the predicted programs."""
    domain = get_domain(domain) if isinstance(domain, str) else domain
    cases_of_split = list(iter_triplets(dataset_root, split=split))
    test = _spread(cases_of_split, limit)
    if not test:
        raise ValueError(f"dataset at {dataset_root} has no {split} triplets")
    sets = {"test": test}
    if paraphrases:
        sets["paraphrases"] = paraphrased_triplets(paraphrases, test)
    cases = [t for ts in sets.values() for t in ts]
    solutions = solution_choices(domain.library)
    weights = load_tool_weights(dataset_root, domain.library.graph)  # as the service ranks them
    started = time.perf_counter()
    vocabulary: frozenset[str] = frozenset()
    refusal_set = _load_questions(out_of_scope) if out_of_scope and _has_heads(model_dir) else []
    if _has_heads(model_dir):
        planned, vocabulary = predict_with_heads(model_dir, [t.query for t in cases] + [q for _, q in refusal_set], domain)
        refused_oos = [c == "out_of_scope" for c, _, _ in planned[len(cases) :]]
        planned = planned[: len(cases)]
        combinations = [c for c, _, _ in planned]
        raw = [(solution, program) for _, solution, program in planned]
    else:  # the from-scratch recipe: generative planner and coder (configs/sft/cpu_full.yaml)
        exemplars = Exemplars(list(iter_triplets(dataset_root, split="train")))
        raw = predict(model_dir, [t.query for t in cases], solutions, exemplars, weights=weights)
        combinations = [None] * len(cases)
    predictions = [(solution, finish_code(code, t.query, domain.spec, vocabulary) if code else "") for t, (solution, code) in zip(cases, raw)]
    generation_s = time.perf_counter() - started
    with sandbox_for(domain, db_path, SandboxSettings()) as sandbox:
        results = sandbox.run_batch([code or "final_result = None" for _, code in predictions])
    fuzzy = frozenset(fuzzy_apis(domain.spec))  # a clarification case is judged by its run's outcome
    scored = [
        Case(t.hops, t.language, t.solution, t.code, t.answer, solution, code, r.ok and bool(code), r.result, r.trace, fuzzy)
        for t, (solution, code), r in zip(cases, predictions, results)
    ]
    report = evaluate(scored[: len(test)], set(domain.spec.api_names))
    report["meta"] = {
        "model": str(model_dir),
        "split": split,
        "test_cases": len(test),
        "invalid_solutions": sum(bool(s) and s not in solutions for s, _ in predictions),
        "refused": sum(not s for s, _ in predictions[: len(test)]),
        "generation_seconds": round(generation_s, 1),
        "queries_per_second": round(len(cases) / generation_s, 1),
        "tool_weights_dataset_version": weights.dataset_version if weights else None,
    }
    markdown = markdown_table(report)
    if paraphrases:
        report["paraphrases"] = evaluate(scored[len(test) :], set(domain.spec.api_names))
        report["paraphrases"]["planner_accuracy"] = _planner_accuracy(sets["paraphrases"], predictions[len(test) :])
        markdown += "\n### Hand-written paraphrases\n\n" + markdown_table(report["paraphrases"])
    report["planner_accuracy"] = _planner_accuracy(test, predictions[: len(test)])
    if any(combinations):
        right = [c == t.combination.id for c, t in zip(combinations, test)]
        report["combination_accuracy"] = round(100 * sum(right) / len(right), 2)
    # phrasings seen in training vs held out of it: how much of the score is generalisation
    report["by_phrasing"] = {}
    for name, wanted in (("seen", False), ("held_out", True)):
        picked = [i for i, t in enumerate(test) if held_out_phrasing(t, domain) == wanted]
        if picked:
            part = evaluate([scored[i] for i in picked], set(domain.spec.api_names))
            report["by_phrasing"][name] = {
                **part["all"], "score": part["score"], **{k: v for k, v in part.items() if k.startswith("score:")},
                "planner_accuracy": _planner_accuracy([test[i] for i in picked], [predictions[i] for i in picked])["all"],
            }
    if refusal_set:
        report["out_of_scope"] = {
            "correct_refusals": {lang: _share([r for (l, _), r in zip(refusal_set, refused_oos) if lang in ("all", l)])
                                 for lang in ("all", "en", "zh")},
            "questions": len(refusal_set),
            "false_refusals": {name: _share([not s for s, _ in predictions[a:b]]) for name, (a, b) in
                               (("test", (0, len(test))), ("paraphrases", (len(test), len(cases))))},
        }
    report["headline"] = headline(report)
    if "out_of_scope" in report:
        o = report["out_of_scope"]
        markdown = (f"Out of scope: {o['correct_refusals']['all']} % of {o['questions']} held-out out-of-scope questions refused "
                    f"(en {o['correct_refusals']['en']} %, zh {o['correct_refusals']['zh']} %); in-scope questions refused wrongly: "
                    f"{split} {o['false_refusals']['test']} %, paraphrases {o['false_refusals']['paraphrases']} %.\n\n") + markdown
    markdown = headline_markdown(report["headline"]) + "\n" + markdown + "\nBy phrasing: " + "; ".join(
        f"{k}: n {v['n']}, ACC {v['ACC']}, Score {v['score']}, planner {v['planner_accuracy']}%" for k, v in report["by_phrasing"].items()
    ) + "\n"
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "predictions.jsonl").open("w") as f:  # every case, for error analysis
        for t, c, r, comb in zip(cases, scored, results, combinations + [None] * (len(cases) - len(combinations))):
            row = {"id": t.id, "query": t.query, "template_id": t.template_id, "gold_solution": t.solution, "solution": c.solution,
                   "gold_combination": t.combination.id, "combination": comb, "category": categorise(c),
                   "code": c.code, "error": r.error, "answer": c.answer, "gold_answer": t.answer}
            f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    (out_dir / "eval.json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    (out_dir / "eval.md").write_text(markdown)
    return report


def headline(report: dict[str, Any]) -> dict[str, Any]:
    """The figures a user meets, first: held-out phrasings and hand-written paraphrases per
    language, beside the all-cases Score (never that alone)."""
    held = report["by_phrasing"].get("held_out", {})
    para = report.get("paraphrases", {})
    return {
        "held_out_phrasings": {k: held.get(f"score:{k}" if k != "all" else "score") for k in ("all", "en", "zh")},
        "paraphrases": {k: para.get(f"score:{k}" if k != "all" else "score") for k in ("all", "en", "zh")} if para else None,
        "all_cases": {k: report.get(f"score:{k}" if k != "all" else "score") for k in ("all", "en", "zh")},
    }


def headline_markdown(h: dict[str, Any]) -> str:
    rows = [("held-out phrasings", h["held_out_phrasings"]), ("hand-written paraphrases", h["paraphrases"]), ("all cases", h["all_cases"])]
    lines = ["| Score on | all | en | zh |", "|---|---|---|---|"]
    lines += [f"| {name} | {v['all']} | {v['en']} | {v['zh']} |" for name, v in rows if v]
    return "\n".join(lines) + "\n"


def _load_questions(path: Path) -> list[tuple[str, str]]:
    data = yaml.safe_load(Path(path).read_text())
    return [(language, q) for language in ("en", "zh") for q in data.get(language, [])]


def _share(flags: list[bool]) -> float | None:
    return round(100 * sum(flags) / len(flags), 2) if flags else None


def _spread(cases: list[Triplet], limit: int | None) -> list[Triplet]:
    """At most `limit` cases taken evenly over the split (its order is by combination), so a
    short evaluation still sees every hop, language and phrasing kind."""
    if limit is None or limit >= len(cases):
        return cases
    step = len(cases) / limit
    return [cases[int(i * step)] for i in range(limit)]


def _has_heads(model_dir: Path) -> bool:
    return (Path(model_dir) / HEADS_FILE).is_file()


def held_out_phrasing(t: Triplet, domain: Any) -> bool:
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
