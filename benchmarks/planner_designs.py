"""Planner designs on the validation questions: the features' head, the n-gram head, and mixes.

    .venv/bin/python benchmarks/planner_designs.py [--model data/aminer/runs/d/model] [--dataset data/aminer/dataset]

Reads the training questions of the dataset as `soay train` does (distinct masked questions and the
out-of-scope ones), the model's features of them (through the feature cache, so a trained model's
are not encoded again) and of the validation questions: the generated validation split with the
out-of-scope validation questions, and the open-world validation set (benchmarks/open_world). Then
fits each design and prints its argmax accuracy (no out-of-scope threshold) on both; writes
benchmarks/results/planner_designs.json. Never reads a test split.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from soay.dataset import iter_triplets  # noqa: E402
from soay.heads import OUT_OF_SCOPE, Heads  # noqa: E402
from soay.lexical import LexicalHead  # noqa: E402
from soay.prompts import question_text  # noqa: E402
from soay.question_encoder import BASE_LINK  # noqa: E402
from soay.settings import Settings  # noqa: E402
from training.fit_heads import distinct_questions, feature_cache, load_heads_config, out_of_scope_split  # noqa: E402
from training.offline import encode, encoder, sentence_encoder  # noqa: E402

OPEN_WORLD = Path(__file__).parent / "open_world" / "validation.jsonl"
OUT = Path(__file__).parent / "results" / "planner_designs.json"


def questions(model: Path, dataset: Path) -> tuple[Heads, dict[str, list[str]], dict[str, list[str]], list[str]]:
    """(heads, questions by set, labels by set, open-world languages)."""
    config = load_heads_config()
    heads = Heads.load(model)
    kept = distinct_questions(list(iter_triplets(dataset, split="train")), heads.vocabulary, None)
    unsupported = min(config.unsupported_questions, math.ceil(config.unsupported_share * len(kept)))
    refusals_train, refusals_val = out_of_scope_split(unsupported)
    generated = list(iter_triplets(dataset, split="validation"))
    open_world = [json.loads(line) for line in OPEN_WORLD.read_text().splitlines() if line.strip()]
    texts = {"train": [t.query for t in kept] + refusals_train, "generated": [t.query for t in generated] + refusals_val,
             "open_world": [q["question"] for q in open_world]}
    labels = {"train": [t.combination.id for t in kept] + [OUT_OF_SCOPE] * len(refusals_train),
              "generated": [t.combination.id for t in generated] + [OUT_OF_SCOPE] * len(refusals_val),
              "open_world": [OUT_OF_SCOPE if q["intent"] == "unsupported" else q["intent"] for q in open_world]}
    return heads, texts, labels, [q["language"] for q in open_world]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=Path("data/aminer/runs/d/model"))
    parser.add_argument("--dataset", type=Path, default=Path("data/aminer/dataset"))
    args = parser.parse_args()
    from sklearn.linear_model import LogisticRegression

    config = load_heads_config()
    heads, texts, labels, languages = questions(args.model, args.dataset)
    cache = feature_cache(Settings(), (args.model / BASE_LINK).resolve(), config)
    with encoder(args.model / BASE_LINK, config.max_model_len) as llm:
        features = {k: encode(llm, v, config.batch_size, desc=k, vocabulary=heads.vocabulary,
                              sentences=sentence_encoder(config.sentence_encoder), cache=cache) for k, v in texts.items()}
    cache.close()
    masked = {k: [question_text(q, heads.vocabulary) for q in v] for k, v in texts.items()}
    mean, scale = features["train"].mean(0), features["train"].std(0) + 1e-6
    z = {k: (v - mean) / scale for k, v in features.items()}
    ones = np.ones(len(labels["train"]))
    lang = np.array(languages)
    results = []

    def score(name: str, probs: dict[str, np.ndarray], classes: list[str]) -> None:
        right = {k: np.array(classes)[probs[k].argmax(1)] == np.array(labels[k]) for k in probs}
        row = {"design": name, "open_world_en": round(100 * right["open_world"][lang == "en"].mean(), 1),
               "open_world_zh": round(100 * right["open_world"][lang == "zh"].mean(), 1),
               "generated": round(100 * right["generated"].mean(), 1)}
        results.append(row)
        print(json.dumps(row), flush=True)

    started = time.perf_counter()
    dense = LogisticRegression(C=0.1, max_iter=config.max_iter).fit(z["train"], labels["train"])
    classes = [str(c) for c in dense.classes_]
    features_head = {k: dense.predict_proba(z[k]) for k in ("generated", "open_world")}
    score("features' head (C 0.1)", features_head, classes)
    for c in (10.0, 30.0):
        lexical = LexicalHead.fit(masked["train"], labels["train"], ones, c)
        ngram_head = {k: lexical.probabilities(masked[k], classes) for k in ("generated", "open_world")}
        score(f"n-gram head (C {c:g})", ngram_head, classes)
        for share in (0.3, 0.5, 0.7):
            score(f"mix, n-gram share {share} (C {c:g})", {k: (1 - share) * features_head[k] + share * ngram_head[k] for k in ngram_head}, classes)
            score(f"geometric mix, n-gram share {share} (C {c:g})",
                  {k: (1 - share) * np.log(features_head[k] + 1e-9) + share * np.log(ngram_head[k] + 1e-9) for k in ngram_head}, classes)
    OUT.write_text(json.dumps({"model": str(args.model), "dataset": str(args.dataset), "seconds": round(time.perf_counter() - started, 1),
                               "note": "argmax accuracy %, no out-of-scope threshold; validation sets only", "designs": results}, indent=2) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
