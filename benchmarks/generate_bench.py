"""Benchmark of the data core: corpus build, verified triplets/s with 1 and 2 Ray workers, and the
wall time of `soay generate` for >= 20,000 verified AMiner triplets.

    .venv/bin/python benchmarks/generate_bench.py [--repeats 3] [--million]
    .venv/bin/python benchmarks/generate_bench.py --million-triplets   # that run alone, merged in

`--million-triplets`: `soay generate` of at least 1,000,000 verified triplets on the default corpus
(2 workers, MILLION_COUNTS per combination), its wall time and the peak memory of its whole
process tree (the command, Ray's processes, the sandboxes; resident set sizes summed, sampled
every half second). Writes benchmarks/results/generate.json and benchmarks/REPORT-generate.md.
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


MILLION_COUNTS = {"train": 18_500, "validation": 500, "test": 2_000}
"""Triplets asked per combination for the million run: 52 combinations x 21,000, of which about 4 %
are rejected (unanswerable, duplicates)."""


def soay_with_peak_memory(*args: str, env: dict[str, str]) -> tuple[float, str, float]:
    """(wall seconds, stdout, peak MiB of the process tree's summed resident memory)."""
    import psutil

    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    peak = 0
    root = psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.5)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"soay {' '.join(args)} failed:\n{err[-3000:]}")
    return time.perf_counter() - start, out, peak / 2**20


def million_triplets(env: dict[str, str]) -> dict:
    env = {**env, "SOAY_DATA__VALIDATION_PER_COMBINATION": str(MILLION_COUNTS["validation"]), "SOAY_DATA__UNIT_SIZE": "200"}
    wall, out, peak_mib = soay_with_peak_memory(
        "generate", "--workers", "2", "--train-per-combination", str(MILLION_COUNTS["train"]),
        "--test-per-combination", str(MILLION_COUNTS["test"]), "--overwrite", "--json", env=env,
    )
    report = json.loads(out.strip().splitlines()[-1])
    return {
        "asked_per_combination": MILLION_COUNTS, "unit_size": 200, "workers": 2,
        "wall_seconds_whole_command": round(wall, 1), "generation_seconds": round(report["seconds"], 1),
        "kept": report["kept"], "counts": report["manifest"]["counts"], "triplets_per_second": report["triplets_per_second"],
        "peak_memory_mib": round(peak_mib),
        "rejected": {k: v for k, v in report["stats"].items() if k.endswith(("error", "mismatch")) or k.startswith(("unanswerable", "duplicate"))},
    }


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
    parser.add_argument("--million-triplets", action="store_true", help="only the 1,000,000-triplet generation, merged into the last results")
    args = parser.parse_args()
    if args.million_triplets:
        work = Path(tempfile.mkdtemp(prefix="soay-bench-"))
        try:
            results = json.loads((RESULTS / "generate.json").read_text())
            results["generate_1m_triplets"] = {**million_triplets({**os.environ, "SOAY_DATA__ROOT": str(work)}), "completed": True}
            results["generate_1m_triplets"]["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform()}
            print("1M triplets", results["generate_1m_triplets"], flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        (RESULTS / "generate.json").write_text(json.dumps(results, indent=2))
        (ROOT / "benchmarks" / "REPORT-generate.md").write_text(render(results, args.repeats))
        return

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
    if r.get("generate_1m_triplets", {}).get("completed") is False:
        m = r["generate_1m_triplets"]
        written = m["written_when_stopped"]
        lines += [
            "",
            "## `soay generate` for 1,000,000 verified triplets: not met (a run stopped at 235,000)",
            "",
            "Command: `.venv/bin/python benchmarks/generate_bench.py --million-triplets` (`soay generate --workers 2",
            f"--train-per-combination {m['asked_per_combination']['train']} --test-per-combination {m['asked_per_combination']['test']}` with",
            f"`SOAY_DATA__VALIDATION_PER_COMBINATION={m['asked_per_combination']['validation']} SOAY_DATA__UNIT_SIZE={m['unit_size']}` on the default",
            "20,000-person corpus), streamed: each combination's triplets are written to shards as soon as",
            "its last unit is in (soay/dataset.py `VersionWriter`).",
            "",
            f"- stopped by hand after {m['stopped_after_seconds']} s with {sum(written.values()):,} triplets on disk "
            f"({', '.join(f'{k} {v:,}' for k, v in written.items())}): {m['rate_triplets_per_s']['overall']} triplets/s overall,",
            f"  {m['rate_triplets_per_s']['first_7.5_min']}/s in the first 7.5 minutes and {m['rate_triplets_per_s']['minutes_7.5_to_14.7']}/s in the next 7 "
            "(the combinations come in id order and cost differently), so about an hour for a million, twice the 30-minute target;",
            f"- the two generation workers used all of both cores ({m['worker_rss_mib_each']} MiB each); the driver "
            f"{m['driver_rss_mib']['at_about_60k']} MiB near 60,000 triplets and {m['driver_rss_mib']['at_220k']} MiB at 220,000: "
            "far below the dataset's size, but still growing, which a finished run has to explain.",
        ]
    if r.get("generate_1m_triplets", {}).get("completed", True) and "generate_1m_triplets" in r:
        m = r["generate_1m_triplets"]
        lines += [
            "",
            "## `soay generate` for >= 1,000,000 verified triplets (2 workers, streamed shards)",
            "",
            "Command: `.venv/bin/python benchmarks/generate_bench.py --million-triplets` (`soay generate --workers 2",
            f"--train-per-combination {m['asked_per_combination']['train']} --test-per-combination {m['asked_per_combination']['test']}` with",
            f"`SOAY_DATA__VALIDATION_PER_COMBINATION={m['asked_per_combination']['validation']} SOAY_DATA__UNIT_SIZE={m['unit_size']}` on the default",
            "20,000-person corpus). Each combination's triplets are written to shards as soon as its last",
            "unit is in (soay/dataset.py `VersionWriter`), so the driver never holds the whole dataset.",
            "",
            f"- verified triplets kept: {m['kept']:,} ({', '.join(f'{k} {v:,}' for k, v in m['counts'].items())})",
            f"- whole command wall time: **{m['wall_seconds_whole_command']} s** (target <= 1,800 s)",
            f"- generation phase: {m['generation_seconds']} s = {m['triplets_per_second']} triplets/s",
            f"- peak memory of the whole process tree (command, Ray, workers, sandboxes): **{m['peak_memory_mib']:,} MiB**",
            f"- instances rejected: {json.dumps(m['rejected'])}",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
