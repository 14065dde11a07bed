"""Benchmark of the CPU default model: wall time of its training and its SoAyEval table on the
held-out test split, plus the hand-written paraphrases kept out of training.

    .venv/bin/python benchmarks/model_bench.py [--recipe configs/sft/cpu_full.yaml] [overrides...]
    .venv/bin/python benchmarks/model_bench.py --run RUN_DIR --dataset DATASET_DIR   # report an existing run

Generates the embedded-default dataset (as `soay demo` does) in a temporary directory, trains the
recipe on Ray Train, evaluates through vLLM; or, given a `soay train` run directory and its
dataset, evaluates that run. Writes benchmarks/results/model.json and benchmarks/REPORT-model.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

import ray

from soay.settings import Settings
from training.evaluate import run_eval
from training.generate import generate
from training.sft import load_config
from training.train_job import run_sft

ROOT = Path(__file__).resolve().parents[1]
PARAPHRASES = ROOT / "benchmarks" / "paraphrases.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", type=Path, default=ROOT / "configs/sft/cpu_full.yaml")
    parser.add_argument("overrides", nargs="*", help="recipe overrides, key=value")
    parser.add_argument("--run", type=Path, help="an existing `soay train` run directory to report instead of training")
    parser.add_argument("--dataset", type=Path, help="the dataset the run was trained on (with --run)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="soay-model-bench-"))
    try:
        settings = Settings(data={"root": work})
        generate_s = None
        if args.run:
            record = json.loads((args.run / "model" / "run.json").read_text())
            dataset = args.dataset
            settings = Settings()  # the embedded defaults' corpus, as `soay train` used
        else:
            ray.init(num_cpus=4, include_dashboard=False, _node_ip_address="127.0.0.1")
            started = time.perf_counter()
            generation = generate(settings, show_progress=False)
            generate_s = round(time.perf_counter() - started, 1)
            dataset = generation.dataset_path
            record = run_sft(load_config(args.recipe, args.overrides), dataset, work / "run")
            ray.shutdown()  # vLLM and the sandbox get the cores
        started = time.perf_counter()
        report = run_eval(
            Path(record["checkpoint"]), dataset, settings.data.corpus_path(), settings.data.domain,
            work / "eval", paraphrases=PARAPHRASES,
        )
        eval_s = time.perf_counter() - started
        table = (work / "eval" / "eval.md").read_text()
    finally:
        ray.shutdown()
        shutil.rmtree(work, ignore_errors=True)

    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "recipe": record["config"],
        "command": " ".join(["benchmarks/model_bench.py", *(f"--run {args.run} --dataset {args.dataset}".split() if args.run else args.overrides)]),
        "dataset": record["dataset"],
        "examples": record["examples"],
        "seconds": {"generate": generate_s, "train": record["wall_seconds"], "eval": round(eval_s, 1)},
        "final_training_metrics": record["metrics"],
        "eval": report,
    }
    (ROOT / "benchmarks/results").mkdir(parents=True, exist_ok=True)
    (ROOT / "benchmarks/results/model.json").write_text(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    meta, para = report["meta"], report["paraphrases"]
    lines = [
        "# Benchmark: the CPU default model (training time and SoAyEval)",
        "",
        f"Command: `.venv/bin/python {result['command']}`",
        f"Machine: {result['machine']['cpus']} CPUs (shared with other jobs while this ran), Python {result['machine']['python']}. "
        f"Recipe: `configs/sft/cpu_full.yaml` (model {record['config']['shape']}, {record['config']['epochs']} epochs, "
        f"{record['config']['workers']} Ray Train workers).",
        f"Data: {record['dataset']['train_triplets']} training triplets -> {record['examples']} examples; "
        f"{meta['test_cases']} held-out test cases (unseen entities; one English and one Chinese phrasing "
        "per combination never seen in training).",
        "",
        "Wall time: " + (f"generation {result['seconds']['generate']} s, " if result["seconds"].get("generate") is not None else "")
        + f"training {result['seconds']['train']} s "
        f"({record['metrics'].get('tokens_per_s', 0):.0f} tokens/s, final loss {record['metrics'].get('loss', 0):.3f}), "
        f"evaluation {result['seconds']['eval']} s.",
        "",
        "## SoAyEval on the held-out test split",
        "",
        f"Invalid solutions: {meta['invalid_solutions']}. Planner accuracy (right solution): "
        + ", ".join(f"{k} {v}%" for k, v in report["planner_accuracy"].items()) + ".",
        "",
        table.split("\n### Hand-written paraphrases")[0].strip(),
        "",
        "## Hand-written paraphrases (benchmarks/paraphrases.yaml, kept out of training)",
        "",
        f"{para['all']['n']} questions (each phrasing filled with three test cases' entities). Planner accuracy: "
        + ", ".join(f"{k} {v}%" for k, v in para["planner_accuracy"].items()) + ".",
        "",
        table.split("\n### Hand-written paraphrases")[1].strip(),
        "",
    ]
    (ROOT / "benchmarks/REPORT-model.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
