"""Benchmark of SFT throughput on Ray Train: tokens/s with 1 and 2 workers (DDP over gloo) and
with 2 workers under DeepSpeed ZeRO-3, for the CPU default model shape.

    .venv/bin/python benchmarks/train_bench.py [--steps 40] [--repeats 2]

Needs a dataset: it generates a small one in a temporary directory. Writes
benchmarks/results/train.json and benchmarks/REPORT-train.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
from pathlib import Path

import ray

from soay.settings import Settings
from training.generate import generate
from training.sft import load_config
from training.train_job import run_sft

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="soay-train-bench-"))
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    try:
        settings = Settings(data={"root": work, "train_per_combination": 40, "test_per_combination": 5})
        dataset = generate(settings, show_progress=False).dataset_path
        variants = {
            "1 worker, DDP": ["workers=1"],
            "2 workers, DDP": ["workers=2"],
            "2 workers, DeepSpeed ZeRO-3": ["workers=2", f"deepspeed={ROOT / 'configs/sft/zero3.json'}"],
        }
        results: dict[str, dict] = {}
        for name, overrides in variants.items():
            runs = []
            for r in range(args.repeats):
                config = load_config(ROOT / "configs/sft/cpu_full.yaml", [f"max_steps={args.steps}", "log_every=10", *overrides])
                record = run_sft(config, dataset, work / f"run-{len(results)}-{r}")
                runs.append(record["metrics"]["tokens_per_s"])
                print(f"{name} run {r}: {record['metrics']['tokens_per_s']:.0f} tokens/s, loss {record['metrics']['loss']:.3f}", flush=True)
            results[name] = {"runs": [round(x) for x in runs], "median_tokens_per_s": round(statistics.median(runs))}
    finally:
        ray.shutdown()
        shutil.rmtree(work, ignore_errors=True)

    report = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "steps": args.steps,
        "model": "cpu_full.yaml shape (4 layers, hidden 256), batch 16 per worker",
        "results": results,
    }
    (ROOT / "benchmarks/results").mkdir(parents=True, exist_ok=True)
    (ROOT / "benchmarks/results/train.json").write_text(json.dumps(report, indent=2))
    base = results["1 worker, DDP"]["median_tokens_per_s"]
    lines = [
        "# Benchmark: SFT throughput on Ray Train (CPU)",
        "",
        f"Command: `.venv/bin/python benchmarks/train_bench.py --steps {args.steps} --repeats {args.repeats}`",
        f"Machine: {report['machine']['cpus']} CPUs, Python {report['machine']['python']}. Model: {report['model']}.",
        "",
        "| run | tokens/s (runs) | median | vs 1 worker |",
        "|---|---|---|---|",
        *[f"| {k} | {', '.join(map(str, v['runs']))} | {v['median_tokens_per_s']} | {v['median_tokens_per_s'] / base:.2f}x |" for k, v in results.items()],
        "",
        "Tokens are non-padding tokens of both roles' examples, summed over workers.",
    ]
    (ROOT / "benchmarks/REPORT-train.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
