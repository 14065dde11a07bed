"""Retriever benchmark: Recall@1/5 and NDCG@5 of the right solution for held-out queries, and query latency.

    .venv/bin/python benchmarks/retriever_bench.py [--dataset DIR] [--sizes 10000 100000] [--queries 500]

Without --dataset it generates the embedded-default dataset (as `soay demo` does) in a temporary
directory. The index is built by the Ray job (`retriever.build.build_index`, two embedding actors)
over API docs and the train split; quality is measured on the test split (held-out entities and
phrasings) and on the hand-written paraphrases of benchmarks/paraphrases.yaml filled with test
entities. Latency is measured on the exemplar index padded to each size with noisy copies of real
exemplar vectors. Writes benchmarks/results/retriever.json and benchmarks/REPORT-retriever.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import ray
import torch

from retriever.build import build_index
from retriever.documents import Document
from retriever.index import RetrieverIndex
from retriever.metrics import rank_of, solution_ranking, summarize
from soay.dataset import iter_triplets, load_manifest
from soay.settings import Settings
from soay.triplets import Triplet
from training.generate import generate
from training.paraphrases import paraphrased_triplets

ROOT = Path(__file__).resolve().parents[1]
PARAPHRASES = ROOT / "benchmarks" / "paraphrases.yaml"
DEPTH = 50
"""Exemplar hits read per query: enough to see every solution that is anywhere near."""
VOTE_DEPTH = 20
PAD_NOISE = 0.02
"""Per-dimension Gaussian noise on a padded copy (cosine to its source about 0.93)."""


def quality(index: RetrieverIndex, triplets: list[Triplet]) -> dict[str, dict[str, dict[str, float]]]:
    """Metrics per language (and all), for two readings of the same hits.

    nearest: distinct solutions in order of their best exemplar (what top-k exemplars show a planner).
    vote: solutions ranked by the summed similarity of their exemplars among the first VOTE_DEPTH hits.
    """
    hits = index.search_vectors(index.embedder.encode([t.query for t in triplets]), DEPTH, "exemplar")
    ranks: dict[str, dict[str, list[int | None]]] = {"nearest": defaultdict(list), "vote": defaultdict(list)}
    for t, found in zip(triplets, hits):
        votes: dict[str, float] = defaultdict(float)
        for h in found[:VOTE_DEPTH]:
            votes[h.payload["solution"]] += h.score
        for reading, ranking in (
            ("nearest", solution_ranking(h.payload["solution"] for h in found)),
            ("vote", sorted(votes, key=lambda s: -votes[s])),
        ):
            rank = rank_of(t.solution, ranking)
            ranks[reading][t.language].append(rank)
            ranks[reading]["all"].append(rank)
    return {reading: {group: summarize(r) for group, r in sorted(by.items())} for reading, by in ranks.items()}


def padded(real: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """`n` unit vectors: the real ones, then noisy copies of randomly chosen real ones."""
    extra = real[rng.integers(0, len(real), n - len(real))]
    extra = extra + rng.normal(0, PAD_NOISE, extra.shape).astype(np.float32)
    extra /= np.linalg.norm(extra, axis=1, keepdims=True)
    return np.concatenate([real, extra])[:n]


def single_query_latency(index: RetrieverIndex, queries: np.ndarray, k: int = 5) -> dict[str, float]:
    """Median and p99 (ms) of one query at a time through `search_vectors` (FAISS + hit records)."""
    times = []
    for q in queries:
        start = time.perf_counter()
        index.search_vectors(q[None], k, "exemplar")
        times.append(time.perf_counter() - start)
    ms = np.array(times) * 1e3
    return {
        "median_ms": round(float(np.median(ms)), 3),
        "p99_ms": round(float(np.percentile(ms, 99)), 3),
        "queries": len(ms),
    }


def latency_rows(real: np.ndarray, queries: np.ndarray, sizes: list[int], dim: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    for n in sizes:
        vectors = padded(real, n, rng)
        docs = [Document(kind="exemplar", text=str(i), payload={"solution": str(i)}) for i in range(n)]
        exact_top1 = None
        for index_type in ("flat", "ivf", "hnsw") if n == max(sizes) else ("flat",):
            started = time.perf_counter()
            index = RetrieverIndex(dim, "padded", index_type, nprobe=16, device="cpu")
            index.add_vectors(docs, vectors)
            build_s = time.perf_counter() - started
            top1 = [h[0].text for h in index.search_vectors(queries, 1, "exemplar")]
            if index_type == "flat":
                exact_top1 = top1
            for threads in (1, os.cpu_count() or 1) if index_type == "flat" else (1,):
                faiss.omp_set_num_threads(threads)
                row = {"vectors": n, "index": index_type, "faiss_threads": threads, "build_s": round(build_s, 2)}
                row |= single_query_latency(index, queries)
                row["top1_agrees_with_flat"] = round(sum(a == b for a, b in zip(top1, exact_top1)) / len(top1), 4)
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
    faiss.omp_set_num_threads(os.cpu_count() or 1)
    return rows


def end_to_end_latency(index: RetrieverIndex, texts: list[str]) -> dict[str, float]:
    """`index.search(text)`: embed one question and search, on one thread as in a 1-CPU Serve replica."""
    torch.set_num_threads(1)
    faiss.omp_set_num_threads(1)
    times = []
    for text in texts:
        start = time.perf_counter()
        index.search(text, 5, "exemplar")
        times.append(time.perf_counter() - start)
    ms = np.array(times) * 1e3
    return {
        "median_ms": round(float(np.median(ms)), 2),
        "p99_ms": round(float(np.percentile(ms, 99)), 2),
        "queries": len(ms),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, help="an existing dataset (default: generate the embedded default)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=500, help="single queries timed per configuration")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="soay-retriever-bench-"))
    load_before = os.getloadavg()
    # a Ray of its own ("local"), even where other Ray instances run on the machine
    ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    try:
        settings = Settings(data={"root": work}, retriever={"device": "cpu"})
        dataset = args.dataset or generate(settings, show_progress=False).dataset_path
        build = build_index(
            settings, dataset=dataset, out=work / "index", traces=work / "none.jsonl", show_progress=False
        )
        ray.shutdown()  # the measurements get the cores
        index = RetrieverIndex.load(work / "index", device="cpu")
        test = list(iter_triplets(dataset, split="test"))
        paraphrases = paraphrased_triplets(PARAPHRASES, test)
        results: dict[str, Any] = {
            "command": " ".join(["python benchmarks/retriever_bench.py", *sys.argv[1:]]),
            "machine": {
                "cpus": os.cpu_count(),
                "cuda": torch.cuda.is_available(),
                "python": platform.python_version(),
                "platform": platform.platform(),
                "faiss": faiss.__version__,
                "load_average_at_start": [round(x, 1) for x in load_before],
            },
            "dataset": {
                "path": str(dataset) if args.dataset else "generated embedded default",
                "version": load_manifest(dataset).version,
                "counts": load_manifest(dataset).counts(),
            },
            "build": {k: v for k, v in build.to_dict().items() if k != "path"}
            | {"docs_per_s": round(sum(build.counts.values()) / build.seconds, 1)},
            "quality": {"test": quality(index, test), "paraphrases": quality(index, paraphrases)},
        }
        real = index.indexes["exemplar"].reconstruct_n(0, index.indexes["exemplar"].ntotal)
        queries = index.embedder.encode([t.query for t in test[: args.queries]])
        results["latency"] = latency_rows(real, queries, sorted(args.sizes), index.dim)
        results["end_to_end"] = end_to_end_latency(index, [t.query for t in test[: args.queries]])
        results["machine"]["load_average_at_end"] = [round(x, 1) for x in os.getloadavg()]
    finally:
        ray.shutdown()
        shutil.rmtree(work, ignore_errors=True)

    out = ROOT / "benchmarks" / "results" / "retriever.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    (ROOT / "benchmarks" / "REPORT-retriever.md").write_text(report(results))
    print(report(results))


def report(r: dict[str, Any]) -> str:
    m, b = r["machine"], r["build"]
    lines = [
        "# Benchmark: retriever (all-MiniLM-L6-v2 + FAISS)",
        "",
        f"Command: `.venv/bin/{r['command']}`",
        (
            f"Machine: {m['cpus']} CPUs (shared: load average {m['load_average_at_start'][0]} at start, "
            f"{m['load_average_at_end'][0]} at end), CUDA {'yes' if m['cuda'] else 'none'}, Python {m['python']}, faiss {m['faiss']}, {m['platform']}."
        ),
        "Raw figures: `benchmarks/results/retriever.json`.",
        "",
        "## Index build (`build_index`, the job behind `soay index`: Ray, 2 embedding actors, model load included)",
        "",
        (
            f"Dataset: {r['dataset']['path']} (version {r['dataset']['version']}, {r['dataset']['counts']}). "
            f"Indexed {b['counts']} in {b['seconds']} s = {b['docs_per_s']} documents/s."
        ),
        "",
        "## Right solution among retrieved exemplars",
        "",
        "A query's hits (50 nearest exemplars) are read as a ranking of distinct solutions; exactly one is",
        "right, so NDCG@5 = 1/log2(1 + rank). *nearest*: ordered by each solution's best exemplar;",
        f"*vote*: by the summed similarity of its exemplars among the first {VOTE_DEPTH}. Chance with",
        "15 solutions: Recall@1 0.067, Recall@5 0.333.",
        "",
        "| queries | reading | language | n | Recall@1 | Recall@5 | NDCG@5 |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, title in (("test", "test split"), ("paraphrases", "hand-written paraphrases")):
        for reading, by in r["quality"][name].items():
            for group, s in by.items():
                lines.append(
                    f"| {title} | {reading} | {group} | {s['queries']} | {s['recall@1']:.3f} | {s['recall@5']:.3f} | {s['ndcg@5']:.3f} |"
                )
    lines += [
        "",
        "## Single-query latency (exemplar index, k=5)",
        "",
        "Each size holds the real exemplar vectors, padded with noisy copies of randomly chosen real ones",
        f"(Gaussian noise σ={PAD_NOISE} per dimension, renormalised). Queries are the embedded test questions,",
        "searched one at a time through `RetrieverIndex.search_vectors` (FAISS plus hit records). *top-1 agrees*:",
        "share of queries whose first hit is the exact (flat) index's.",
        "",
        "| vectors | index | FAISS threads | build s | median ms | p99 ms | top-1 agrees |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in r["latency"]:
        lines.append(
            f"| {row['vectors']:,} | {row['index']} | {row['faiss_threads']} | {row['build_s']} | {row['median_ms']} | "
            f"{row['p99_ms']} | {row['top1_agrees_with_flat']} |"
        )
    e = r["end_to_end"]
    lines += [
        "",
        (
            f"End to end (`RetrieverIndex.search(text)`: embed one question, then search; 1 torch and 1 FAISS thread, "
            f"as in a 1-CPU Serve replica): median {e['median_ms']} ms, p99 {e['p99_ms']} ms over {e['queries']} queries."
        ),
        "",
        "## Notes",
        "",
        "- The test split holds out entities *and* phrasings, so a test question never matches a training",
        "  question word for word; the paraphrases are phrased unlike any template.",
        "- Chinese questions score lower: all-MiniLM-L6-v2 is an English model. `retriever.model` takes a",
        "  multilingual sentence-transformers model (on a GPU machine) with no code change.",
        "- On this shared 2-core machine FAISS's OpenMP threads make single queries slower, not faster. A Serve",
        "  replica with `num_cpus: 1` gets `OMP_NUM_THREADS=1` from Ray; batched searches are where threads pay.",
        "- Flat search grows linearly (about 10x from 10k to 100k vectors); IVF and HNSW (`retriever.index_type`)",
        "  stay well under a millisecond at 100k at the cost of a build and a few per cent of top-1 agreement.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
