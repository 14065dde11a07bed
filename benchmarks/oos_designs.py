"""Benchmark of out-of-scope detectors side by side, on the validation split only (issue 15).

    SOAY_DATA__ROOT=DATA .venv/bin/python benchmarks/oos_designs.py --dataset DATA/aminer/dataset --model RUN/model

Designs A-J read the base's features (as `soay train` encodes them, from the model's `base` link),
K reads them beside the retriever model's sentence vector (the default recipe). Each gets the lowest threshold that refuses at most `--target` of the in-scope
validation questions, and is reported by its false refusals (all, and those worded as nothing in
training, which is what the held-out phrasings and paraphrases of test are) and its correct
refusals of the validation out-of-scope questions. Test is never read: this chooses a design, and
benchmarks/model_bench.py then measures the chosen one once. Writes benchmarks/results/oos_designs.json.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import yaml

from soay.dataset import iter_triplets
from soay.domains import get_domain
from soay.prompts import question_text
from training.evaluate import held_out_phrasing
from training.fit_heads import distinct_questions, literal_vocabulary, out_of_scope_split
from training.offline import encode, encoder, sentence_encoder

ROOT = Path(__file__).resolve().parents[1]
WRAPPERS = ROOT / "benchmarks" / "oos_wrappers.yaml"
ENTITY_TEMPLATES = ROOT / "benchmarks" / "oos_entity_templates.yaml"
MARKER = re.compile(r"<\|[a-z]\d+\|>")
OOS = "out_of_scope"
SENTENCE_ENCODER = "all-MiniLM-L6-v2"
ENTITY_QUESTIONS = 3
"""Design J: questions per template of oos_entity_templates.yaml."""


def threshold_for(p_in: np.ndarray, target: float) -> float:
    """The lowest threshold (on a 301-point grid over the score's range) refusing at most `target` of p_in."""
    grid = np.linspace(min(p_in.min(), 0.0), max(p_in.max(), 1.0) + 1e-6, 301)
    return float(next(t for t in grid if np.mean(p_in >= t) <= target))


def logistic(x: np.ndarray, y: np.ndarray, c: float, class_weight: str | None = None):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, max_iter=2000, class_weight=class_weight).fit(x, y)


def entity_questions(triplets: list, rng: random.Random) -> tuple[list[str], list[str]]:
    """Design J's out-of-scope questions that name entities of the training split: ENTITY_QUESTIONS
    per template of oos_entity_templates.yaml; every fifth template's go to validation, so that
    validation never sees a training wording."""
    data = yaml.safe_load(ENTITY_TEMPLATES.read_text())
    values = {slot: sorted({str(t.inputs[key]) for t in triplets if t.inputs.get(key)}) for slot, key in data["slots"].items()}
    groups = [[template.format_map({slot: rng.choice(v) for slot, v in values.items()}) for _ in range(ENTITY_QUESTIONS)]
              for language in ("en", "zh") for template in data[language]]
    return [q for i, g in enumerate(groups) if i % 5 for q in g], [q for i, g in enumerate(groups) if not i % 5 for q in g]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True, help="a heads run's model directory (its base link is read)")
    parser.add_argument("--target", type=float, default=0.01, help="share of in-scope validation questions a design may refuse")
    parser.add_argument("--C", type=float, default=0.1, help="the planner head's C (the default recipe's choice)")
    args = parser.parse_args()

    domain = get_domain("aminer")
    triplets = list(iter_triplets(args.dataset, split="train"))
    validation = list(iter_triplets(args.dataset, split="validation"))
    vocabulary = literal_vocabulary(triplets)
    kept = distinct_questions(triplets, vocabulary)
    oos_train, oos_val = out_of_scope_split()
    rng = random.Random(0)
    wrappers = yaml.safe_load(WRAPPERS.read_text())
    wrapped = [rng.choice(wrappers[t.language]["before"]) + t.query + rng.choice(wrappers[t.language]["after"]) for t in kept]
    named_train, named_val = entity_questions(triplets, rng)
    texts = [t.query for t in kept] + oos_train + [t.query for t in validation] + oos_val + wrapped + named_train + named_val
    sentences = sentence_encoder(SENTENCE_ENCODER)
    with encoder((args.model / "base").resolve()) as llm:
        wide = encode(llm, texts, desc="features", vocabulary=vocabulary, sentences=sentences)
    cuts = np.cumsum([len(kept), len(oos_train), len(validation), len(oos_val), len(wrapped), len(named_train)])
    w_in, w_oos, w_val, w_oos_val, _, _, w_named_val = np.split(wide, cuts)
    # designs A-J read the base's features alone, K both encoders' (the default recipe's)
    x_in, x_oos, x_val, x_oos_val, x_wrapped, x_named, x_named_val = np.split(wide[:, : wide.shape[1] - sentences.dim], cuts)
    y_in = np.array([t.combination.id for t in kept])
    unseen = np.array([held_out_phrasing(t, domain) for t in validation])
    x_all = np.vstack([x_in, x_oos])
    mean, scale = x_all.mean(0), x_all.std(0) + 1e-6

    def z(a: np.ndarray) -> np.ndarray:
        return (a - mean) / scale

    def unit(a: np.ndarray) -> np.ndarray:
        u = z(a)
        return u / np.linalg.norm(u, axis=1, keepdims=True)

    def multinomial(x: np.ndarray, y: np.ndarray, c: float = args.C) -> Callable[[np.ndarray], np.ndarray]:
        head = logistic(z(x), y, c)
        return lambda a: head.predict_proba(z(a))[:, list(head.classes_).index(OOS)]

    y_all = np.concatenate([y_in, [OOS] * len(x_oos)])
    planner = logistic(z(x_all), y_all, args.C)  # design A's head, fitted once

    def default(a: np.ndarray) -> np.ndarray:
        return planner.predict_proba(z(a))[:, list(planner.classes_).index(OOS)]

    w_all = np.vstack([w_in, w_oos])
    w_mean, w_scale = w_all.mean(0), w_all.std(0) + 1e-6
    both = logistic((w_all - w_mean) / w_scale, y_all, args.C)

    def out_of_fold(folds: int = 4) -> float:
        """B: the threshold read off training questions of phrasings the fold's head never saw."""
        key = [t.template_id.split("/", 1)[1] for t in kept]  # language/index, across combinations
        fold_of = {k: i % folds for i, k in enumerate(sorted(set(key)))}
        fold_in, fold_oos = np.array([fold_of[k] for k in key]), np.arange(len(x_oos)) % folds
        p_in = np.zeros(len(x_in))
        for f in range(folds):
            head = multinomial(np.vstack([x_in[fold_in != f], x_oos[fold_oos != f]]),
                               np.concatenate([y_in[fold_in != f], [OOS] * int((fold_oos != f).sum())]))
            p_in[fold_in == f] = head(x_in[fold_in == f])
        return threshold_for(p_in, args.target)

    from sklearn.neural_network import MLPClassifier

    binary = logistic(z(x_all), np.r_[np.zeros(len(x_in)), np.ones(len(x_oos))], 1.0, "balanced")
    in_scope_columns = [i for i, label in enumerate(planner.classes_) if label != OOS]
    network = MLPClassifier(hidden_layer_sizes=(256,), alpha=1.0, max_iter=500, random_state=0).fit(z(x_all), y_all)
    augmented = multinomial(np.vstack([x_in, x_wrapped, x_oos]), np.concatenate([y_in, y_in, [OOS] * len(x_oos)]))
    named = multinomial(np.vstack([x_in, x_oos, x_named]), np.concatenate([y_in, [OOS] * (len(x_oos) + len(x_named))]))
    e_in, e_oos = unit(x_in), unit(x_oos)

    def knn_margin(a: np.ndarray, k: int = 5) -> np.ndarray:
        u = unit(a)
        return np.sort(u @ e_oos.T, 1)[:, -k:].mean(1) - np.sort(u @ e_in.T, 1)[:, -k:].mean(1)

    has_marker = np.array([bool(MARKER.search(question_text(q, vocabulary))) for q in oos_val])
    base = {"in": x_val, "out": x_oos_val, "named": x_named_val}  # the validation sets, by reader
    wide_sets = {"in": w_val, "out": w_oos_val, "named": w_named_val}

    def on_base(score: Callable[[np.ndarray], np.ndarray]) -> Callable[[str], np.ndarray]:
        return lambda which: score(base[which])

    designs: dict[str, tuple[Callable[[str], np.ndarray], float | None]] = {
        "A planner head's out-of-scope class on the base's features (the former default)": (on_base(default), None),
        "B A, threshold from out-of-fold unseen training phrasings": (on_base(default), out_of_fold()),
        "C separate in/out detector (balanced logistic)": (on_base(lambda a: binary.predict_proba(z(a))[:, 1]), None),
        "D nearest neighbours: 5 out-of-scope vs 5 in-scope": (on_base(knn_margin), None),
        "F 1 - the best in-scope class's probability": (on_base(lambda a: 1 - planner.predict_proba(z(a))[:, in_scope_columns].max(axis=1)), None),
        "H MLP head (256 hidden) with the out-of-scope class": (
            on_base(lambda a: network.predict_proba(z(a))[:, list(network.classes_).index(OOS)]), None),
        "I A trained with wrapped copies of the in-scope questions": (on_base(augmented), None),
        "J A trained with out-of-scope questions naming training entities": (on_base(named), None),
        "K A on the base's and the retriever model's features (the default)": (
            lambda which: both.predict_proba((wide_sets[which] - w_mean) / w_scale)[:, list(both.classes_).index(OOS)], None),
    }

    def row(name: str, threshold: float | None, refused_in: np.ndarray, refused_out: np.ndarray, refused_named: np.ndarray | None) -> dict:
        return {"design": name, "threshold": None if threshold is None else round(threshold, 3),
                "false_refusals": round(float(refused_in.mean()), 4), "false_refusals_unseen": round(float(refused_in[unseen].mean()), 4),
                "correct_refusals": round(float(refused_out.mean()), 4),
                "correct_refusals_naming_entities": None if refused_named is None else round(float(refused_named.mean()), 4)}

    rows = []
    for name, (score, fixed) in designs.items():
        threshold = fixed if fixed is not None else threshold_for(score("in"), args.target)
        rows.append(row(name, threshold, score("in") >= threshold, score("out") >= threshold, score("named") >= threshold))
    a_score, d_score = designs[next(iter(designs))][0], designs["D nearest neighbours: 5 out-of-scope vs 5 in-scope"][0]
    ta, td = threshold_for(a_score("in"), args.target), threshold_for(d_score("in"), args.target)
    rows.append(row("E A and D must both refuse", None, (a_score("in") >= ta) & (d_score("in") >= td),
                    (a_score("out") >= ta) & (d_score("out") >= td), (a_score("named") >= ta) & (d_score("named") >= td)))
    # G: a question that names nothing is refused at any score; one with a mention needs A's threshold
    rows.append(row("G A, and every question without a mention refused", ta, a_score("in") >= ta,
                    np.where(has_marker, a_score("out") >= ta, True), None))
    out = {"dataset": str(args.dataset), "model": str(args.model), "target": args.target, "C": args.C,
           "validation": {"in_scope": len(validation), "unseen_phrasing": int(unseen.sum()), "out_of_scope": len(oos_val), "naming_entities": len(named_val)},
           "training": {"questions": len(kept), "out_of_scope": len(oos_train)}, "designs": rows}
    print("| design | threshold | false refusals % | on unseen phrasings % | correct refusals % | of those naming an entity % |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        named_share = "–" if r.get("correct_refusals_naming_entities") is None else f"{100 * r['correct_refusals_naming_entities']:.1f}"
        print(f"| {r['design']} | {r['threshold']} | {100 * r['false_refusals']:.2f} | {100 * r['false_refusals_unseen']:.2f} | {100 * r['correct_refusals']:.1f} | {named_share} |")
    (ROOT / "benchmarks/results").mkdir(parents=True, exist_ok=True)
    (ROOT / "benchmarks/results/oos_designs.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
