"""Benchmark of the data core: corpus build, verified triplets/s with 1 and 2 Ray workers, and the
wall time of `soay generate` for >= 20,000 verified AMiner triplets.

    .venv/bin/python benchmarks/generate_bench.py [--repeats 3] [--million]

Writes benchmarks/results/generate.json and benchmarks/REPORT-generate.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def soay(*args: str, env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "cli.main", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"soay {' '.join(args)} failed:\n{out.stderr[-3000:]}")
    return time.perf_counter() - start, out.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--million", action="store_true", help="also time a 1,000,000-person corpus build")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="soay-bench-"))
    env = {**os.environ, "SOAY_DATA__ROOT": str(work)}
    results: dict[str, object] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
    }
    try:
        build_s, out = soay("corpus", "build", env=env)
        results["corpus_default"] = {"seconds": round(build_s, 2), **json.loads(out.strip().splitlines()[-1])}
        print("corpus", results["corpus_default"], flush=True)

        throughput: dict[str, list[float]] = {}
        for workers in (1, 2):
            for r in range(args.repeats):
                _, out = soay(
                    "generate", "--workers", str(workers), "--train-per-combination", "40", "--test-per-combination", "10",
                    "--overwrite", "--json", env=env,
                )
                report = json.loads(out.strip().splitlines()[-1])
                throughput.setdefault(str(workers), []).append(report["triplets_per_second"])
                print(f"workers={workers} run={r} kept={report['kept']} {report['triplets_per_second']}/s", flush=True)
        results["throughput_triplets_per_s"] = {
            w: {"runs": v, "median": statistics.median(v)} for w, v in throughput.items()
        }
        results["speedup_2_over_1"] = round(
            statistics.median(throughput["2"]) / statistics.median(throughput["1"]), 2
        )

        wall, out = soay(
            "generate", "--workers", "2", "--train-per-combination", "380", "--test-per-combination", "42",
            "--overwrite", "--json", env=env,
        )
        big = json.loads(out.strip().splitlines()[-1])
        results["generate_20k"] = {
            "wall_seconds_whole_command": round(wall, 1),
            "generation_seconds": round(big["seconds"], 1),
            "kept": big["kept"],
            "counts": big["manifest"]["counts"],
            "triplets_per_second": big["triplets_per_second"],
            "rejected": {k: v for k, v in big["stats"].items() if k.endswith(("error", "mismatch")) or k == "unanswerable"},
        }
        print("20k", results["generate_20k"], flush=True)

        if args.million:
            env_m = {**env, "SOAY_DATA__ROOT": str(work / "million")}
            build_s, out = soay("corpus", "build", "--size", "1000000", env=env_m)
            db = work / "million" / "aminer" / "corpus.sqlite"
            results["corpus_1m"] = {
                "seconds": round(build_s, 1),
                "size_mb": round(db.stat().st_size / 2**20, 1),
                **json.loads(out.strip().splitlines()[-1]),
            }
            print("1M", results["corpus_1m"], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "generate.json").write_text(json.dumps(results, indent=2))
    (ROOT / "benchmarks" / "REPORT-generate.md").write_text(render(results, args.repeats))
    print(f"wrote {RESULTS / 'generate.json'} and benchmarks/REPORT-generate.md")


def render(r: dict, repeats: int) -> str:
    t = r["throughput_triplets_per_s"]
    g = r["generate_20k"]
    lines = [
        "# Benchmark: data core (corpus, verified triplet generation)",
        "",
        f"Command: `.venv/bin/python benchmarks/generate_bench.py --repeats {repeats}"
        + (" --million`" if "corpus_1m" in r else "`"),
        f"Machine: {r['machine']['cpus']} CPUs, Python {r['machine']['python']}, {r['machine']['platform']}.",
        "Raw figures: `benchmarks/results/generate.json`.",
        "",
        "## Corpus build (default size)",
        "",
        f"{r['corpus_default'].get('persons', '?')} persons, {r['corpus_default'].get('publications', '?')} publications "
        f"in {r['corpus_default']['seconds']} s (whole `soay corpus build` command).",
    ]
    if "corpus_1m" in r:
        m = r["corpus_1m"]
        lines += ["", f"1,000,000 persons: {m['seconds']} s, {m['size_mb']} MB on disk."]
    lines += [
        "",
        "## Verified triplets per second (49 combinations x 50 triplets, median of runs)",
        "",
        "| Ray workers | runs (triplets/s) | median |",
        "|---|---|---|",
        *[f"| {w} | {', '.join(str(x) for x in v['runs'])} | {v['median']} |" for w, v in t.items()],
        "",
        f"Speed-up of 2 workers over 1: {r['speedup_2_over_1']}x (the machine has 2 cores; the driver and",
        "the sandbox children share them).",
        "",
        "## `soay generate` for >= 20,000 verified AMiner triplets (2 workers)",
        "",
        f"- verified triplets kept: {g['kept']} ({', '.join(f'{k} {v}' for k, v in g['counts'].items())})",
        f"- whole command wall time (Ray start, workers, writing shards): {g['wall_seconds_whole_command']} s "
        f"(target <= 300 s)",
        f"- generation phase: {g['generation_seconds']} s = {g['triplets_per_second']} triplets/s",
        f"- instances rejected: {json.dumps(g['rejected'])}",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
