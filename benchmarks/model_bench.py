"""Benchmark of trained models side by side on one dataset: SoAyEval on the held-out test split, the
hand-written paraphrases and the held-out out-of-scope questions, with each model's training record.
With --split validation it reads the validation split and benchmarks/validation_paraphrases.yaml, a
second hand-written set written apart from the test one, so that tuning never reads test.

    .venv/bin/python benchmarks/model_bench.py --dataset DATASET_DIR --model heads=RUN/model --model scratch=RUN2/model

The models come from `soay train` on that dataset (configs/heads.yaml, the default; or
configs/sft/cpu_full.yaml, the from-scratch recipe). Tuning reads the validation split
(`soay eval --split validation`); this benchmark reads test, once per reported model. Writes
benchmarks/results/model.json; benchmarks/REPORT-model.md quotes it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import yaml

from retriever.documents import language_of
from soay.domains import domain_for
from soay.settings import Settings
from training.evaluate import run_eval
from training.fit_heads import out_of_scope_split

ROOT = Path(__file__).resolve().parents[1]
PARAPHRASES = {"test": ROOT / "benchmarks" / "paraphrases.yaml", "validation": ROOT / "benchmarks" / "validation_paraphrases.yaml"}
OUT_OF_SCOPE = ROOT / "benchmarks" / "out_of_scope.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--model", action="append", required=True, help="NAME=MODEL_DIR (repeatable)")
    parser.add_argument("--split", default="test", choices=["validation", "test"],
                        help="test for reports; validation while tuning, with its own hand-written paraphrases")
    parser.add_argument("--paraphrases", type=Path, help="the split's paraphrase file by default (PARAPHRASES)")
    args = parser.parse_args()
    paraphrases = args.paraphrases or PARAPHRASES[args.split]
    out_of_scope = OUT_OF_SCOPE if args.split == "test" else validation_out_of_scope(ROOT / "benchmarks/results/out_of_scope-validation.yaml")
    settings = Settings()  # the corpus of the settings (SOAY_DATA__ROOT), as `soay train` used
    results = {}
    for item in args.model:
        name, _, model = item.partition("=")
        model_dir = Path(model)
        started = time.perf_counter()
        report = run_eval(model_dir, args.dataset, settings.data.corpus_path(), domain_for(settings), model_dir.parent / f"bench-{args.split}",
                          paraphrases=paraphrases, split=args.split, out_of_scope=out_of_scope)
        run = json.loads((model_dir / "run.json").read_text())
        results[name] = {"model": str(model_dir), "train": run, "eval_seconds": round(time.perf_counter() - started, 1), "eval": report,
                         "markdown": (model_dir.parent / f"bench-{args.split}" / "eval.md").read_text()}
        print(f"== {name}\n{results[name]['markdown']}", flush=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "command": "benchmarks/model_bench.py " + " ".join(f"--model {m}" for m in args.model) + f" --dataset {args.dataset} --split {args.split}",
        "models": results,
    }
    (ROOT / "benchmarks/results").mkdir(parents=True, exist_ok=True)
    (ROOT / "benchmarks/results" / ("model.json" if args.split == "test" else f"model-{args.split}.json")).write_text(json.dumps(out, indent=2, ensure_ascii=False, default=str))


def validation_out_of_scope(path: Path) -> Path:
    """The out-of-scope questions that tune the threshold (never benchmarks/out_of_scope.yaml,
    which is test's), as a file run_eval reads."""
    _, validation = out_of_scope_split()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"en": [q for q in validation if language_of(q) == "en"],
                                    "zh": [q for q in validation if language_of(q) == "zh"]}, allow_unicode=True))
    return path


if __name__ == "__main__":
    main()
