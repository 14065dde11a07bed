"""Benchmark of the CPU default model: wall time of its training and its SoAyEval table on the
held-out test split, plus the hand-written paraphrases kept out of training.

    .venv/bin/python benchmarks/model_bench.py [--recipe configs/sft/cpu_full.yaml] [overrides...]

Generates the embedded-default dataset (as `soay demo` does) in a temporary directory, trains the
recipe on Ray Train, evaluates through vLLM. Writes benchmarks/results/model.json and
benchmarks/REPORT-model.md.
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
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="soay-model-bench-"))
    ray.init(num_cpus=4, include_dashboard=False, _node_ip_address="127.0.0.1")
    try:
        settings = Settings(data={"root": work})
        started = time.perf_counter()
        generation = generate(settings, show_progress=False)
        generate_s = time.perf_counter() - started
        config = load_config(args.recipe, args.overrides)
        record = run_sft(config, generation.dataset_path, work / "run")
        ray.shutdown()  # vLLM and the sandbox get the cores
        started = time.perf_counter()
        report = run_eval(
            Path(record["checkpoint"]), generation.dataset_path, settings.data.corpus_path(), settings.data.domain,
            work / "eval", paraphrases=PARAPHRASES,
        )
        eval_s = time.perf_counter() - started
        table = (work / "eval" / "eval.md").read_text()
    finally:
        ray.shutdown()
        shutil.rmtree(work, ignore_errors=True)

    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "recipe": str(args.recipe.relative_to(ROOT)) if args.recipe.is_relative_to(ROOT) else str(args.recipe),
        "overrides": args.overrides,
        "dataset": record["dataset"],
        "examples": record["examples"],
        "seconds": {"generate": round(generate_s, 1), "train": record["wall_seconds"], "eval": round(eval_s, 1)},
        "final_training_metrics": record["metrics"],
        "eval": report,
    }
    (ROOT / "benchmarks/results").mkdir(parents=True, exist_ok=True)
    (ROOT / "benchmarks/results/model.json").write_text(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    meta, para = report["meta"], report["paraphrases"]
    lines = [
        "# Benchmark: the CPU default model (training time and SoAyEval)",
        "",
        f"Command: `.venv/bin/python benchmarks/model_bench.py {' '.join(args.overrides)}`".replace(" `", "`"),
        f"Machine: {result['machine']['cpus']} CPUs, Python {result['machine']['python']}. Recipe: `{result['recipe']}`.",
        f"Data: {record['dataset']['train_triplets']} training triplets -> {record['examples']} examples; "
        f"{meta['test_cases']} held-out test cases (unseen entities; one English and one Chinese phrasing "
        "per combination never seen in training).",
        "",
        f"Wall time: generation {result['seconds']['generate']} s, training {result['seconds']['train']} s "
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
