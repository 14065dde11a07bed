"""End-to-end benchmark of the question-answering service (`soay serve`).

Closed-loop users (each sends its next question when the last is answered) at 1, 4 and 16
concurrent users ask held-out test questions over `POST /v1/ask`; reported per level: latency
p50/p99, answers/s, errors, and the median time of every stage from the records' `timings`. Then
an overload burst far beyond the configured capacity checks that the excess is refused with 503
quickly instead of queueing. Writes JSON and a Markdown report.

    .venv/bin/python benchmarks/serve_bench.py --url http://127.0.0.1:8400 --duration 30 \
        --model-note "cpu_full recipe, 3 M params" --out benchmarks/REPORT-serve.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from soay.dataset import iter_triplets
from soay.settings import Settings

STAGES = ("retrieve", "plan", "code", "execute", "answer")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def closed_loop(url: str, questions: list[str], users: int, duration: float, headers: dict[str, str]) -> dict[str, Any]:
    """`users` concurrent users asking for `duration` seconds; latencies of answered requests."""
    latencies: list[float] = []
    stages: dict[str, list[float]] = {s: [] for s in STAGES}
    statuses: Counter[int] = Counter()
    deadline = time.perf_counter() + duration

    async def user(n: int, client: httpx.AsyncClient) -> None:
        i = n
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            try:
                response = await client.post(f"{url}/v1/ask", json={"query": questions[i % len(questions)]}, headers=headers)
                status = response.status_code
            except httpx.HTTPError:
                status = 0
            statuses[status] += 1
            if status == 200:
                latencies.append(time.perf_counter() - started)
                for stage, seconds in response.json()["timings"].items():
                    stages.setdefault(stage, []).append(seconds)
            i += users

    started = time.perf_counter()
    async with httpx.AsyncClient(timeout=300) as client:
        await asyncio.gather(*(user(n, client) for n in range(users)))
    wall = time.perf_counter() - started
    return {
        "users": users,
        "answered": len(latencies),
        "statuses": dict(statuses),
        "answers_per_s": round(len(latencies) / wall, 2),
        "p50_s": round(percentile(latencies, 0.5), 3),
        "p99_s": round(percentile(latencies, 0.99), 3),
        "stage_p50_s": {s: round(statistics.median(v), 4) for s, v in stages.items() if v},
    }


async def overload(url: str, question: str, requests: int, headers: dict[str, str]) -> dict[str, Any]:
    """A burst of simultaneous requests: how many were refused, and how fast the refusals came."""
    async with httpx.AsyncClient(timeout=300) as client:

        async def one() -> tuple[int, float]:
            started = time.perf_counter()
            response = await client.post(f"{url}/v1/ask", json={"query": question}, headers=headers)
            return response.status_code, time.perf_counter() - started

        outcomes = await asyncio.gather(*(one() for _ in range(requests)))
    refused = [t for s, t in outcomes if s == 503]
    return {
        "requests": requests,
        "statuses": dict(Counter(s for s, _ in outcomes)),
        "refusal_p50_s": round(percentile(refused, 0.5), 3),
        "refusal_max_s": round(max(refused), 3) if refused else None,
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Serving benchmark (`benchmarks/serve_bench.py`)",
        "",
        f"Model: {report['model_note']}. Machine: {report['machine']}. {report['duration_s']} s per level, "
        f"closed-loop users asking {report['questions']} held-out test questions over `POST /v1/ask`.",
        "",
        "| users | answered | answers/s | p50 s | p99 s | non-200 | " + " | ".join(f"{s} p50 s" for s in STAGES) + " |",
        "|---|---|---|---|---|---|" + "---|" * len(STAGES),
    ]
    for level in report["levels"]:
        non_ok = {k: v for k, v in level["statuses"].items() if k != 200}
        lines.append(
            f"| {level['users']} | {level['answered']} | {level['answers_per_s']} | {level['p50_s']} | {level['p99_s']} | "
            f"{json.dumps(non_ok) if non_ok else '-'} | " + " | ".join(str(level["stage_p50_s"].get(s, "-")) for s in STAGES) + " |"
        )
    if "overload" in report:
        o = report["overload"]
        lines += [
            "",
            f"Overload: {o['requests']} simultaneous requests -> {o['statuses']}; 503s came after "
            f"{o['refusal_p50_s']} s (median), {o['refusal_max_s']} s at most.",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    settings = Settings()
    parser.add_argument("--url", default=f"http://{settings.serve.host}:{settings.serve.port}")
    parser.add_argument("--dataset", type=Path, default=settings.data.dataset_path(), help="Dataset whose test split gives the questions.")
    parser.add_argument("--users", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--duration", type=float, default=30.0, help="Seconds per concurrency level.")
    parser.add_argument("--warmup", type=int, default=3, help="Questions asked first and not counted (first-call costs).")
    parser.add_argument("--overload", type=int, default=200, help="Requests in the overload burst (0 skips it).")
    parser.add_argument("--model-note", default="unspecified", help="Which model was served, for the report.")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/REPORT-serve.md"))
    args = parser.parse_args()

    headers = {"Authorization": f"Bearer {settings.serve.api_key}"} if settings.serve.api_key else {}
    questions = [t.query for t in iter_triplets(args.dataset, split="test")]
    if not questions:
        raise SystemExit(f"no test questions in {args.dataset}")
    httpx.get(f"{args.url}/healthz", timeout=30).raise_for_status()
    for question in questions[: args.warmup]:
        httpx.post(f"{args.url}/v1/ask", json={"query": question}, headers=headers, timeout=300)
    report: dict[str, Any] = {
        "model_note": args.model_note,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "duration_s": args.duration,
        "questions": len(questions),
        "levels": [],
    }
    for users in args.users:
        level = asyncio.run(closed_loop(args.url, questions, users, args.duration, headers))
        print(json.dumps(level), flush=True)
        report["levels"].append(level)
    if args.overload:
        report["overload"] = asyncio.run(overload(args.url, questions[0], args.overload, headers))
        print(json.dumps(report["overload"]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=2))
    args.out.write_text(markdown(report))


if __name__ == "__main__":
    main()
