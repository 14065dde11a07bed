"""Locust load test of the serving stack (`soay serve`) at several user counts.

Each level is one headless `soay loadtest` run (loadtest/locustfile.py: held-out questions over
/v1/ask, OpenAI chat plain and streaming, feedback on answers, bad requests that must get a 4xx);
its CSV files and locust's HTML report (latency, throughput and user charts) are kept under
--results, and the Markdown report compares the levels: p50/p95/p99, answers/s, failure rates.

    .venv/bin/python benchmarks/loadtest_bench.py --url http://127.0.0.1:8400 --users 4 16 --duration 60s \
        --model-note "cpu_full recipe, /tmp/exp/e3" --out benchmarks/REPORT-loadtest.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path
from typing import Any

import httpx

from loadtest.run import run_loadtest
from soay.dataset import iter_triplets
from soay.settings import Settings


def latency_cells(summary: dict[str, Any], name: str) -> str:
    """p50 / p95 / p99 in seconds of one request name, from the summary's endpoint rows."""
    e = next((e for e in summary["endpoints"] if e["name"] == name and e["requests"]), None)
    return f"{e['p50_ms'] / 1000:.2f} / {e['p95_ms'] / 1000:.2f} / {e['p99_ms'] / 1000:.2f}" if e else "-"


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Load test of the serving stack (`benchmarks/loadtest_bench.py`)",
        "",
        f"Model: {report['model_note']}. Machine: {report['machine']}. Locust (`soay loadtest`), {report['duration']} per level, "
        + (f"users with think time U(0, {report['think_time']} s)" if report["think_time"] else "closed-loop users (no think time)")
        + f", request mix per round of each user `{report['mix']}`, "
        f"questions from the held-out test split ({report['questions']}, 1/2/3 hops, en + zh drawn evenly).",
        "",
        "| users | requests | failed | failure rate | answers/s | /v1/ask p50 / p95 / p99 s | chat p50 / p95 / p99 s | "
        "chat stream p50 / p95 / p99 s | bad requests (4xx) | statuses |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for level in report["levels"]:
        s = level["summary"]
        lines.append(
            f"| {level['users']} | {s['requests']} | {s['failures']} | {100 * s['failure_rate']:.1f} % | {s['answers_per_s']:.2f} | "
            f"{latency_cells(s, '/v1/ask')} | {latency_cells(s, '/v1/chat/completions')} | "
            f"{latency_cells(s, '/v1/chat/completions (stream)')} | {s['bad_requests']} ({s['bad_requests_4xx']}) | "
            f"{', '.join(f'{k}: {v}' for k, v in sorted(s['statuses'].items()))} |"
        )
    lines += ["", "Charts (latency percentiles, requests/s, users over time) and per-request tables: "
              + ", ".join(f"[{level['users']} users]({level['html']})" for level in report["levels"]) + "."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    settings = Settings()
    parser.add_argument("--url", default=f"http://{settings.serve.host}:{settings.serve.port}")
    parser.add_argument("--dataset", type=Path, default=settings.data.dataset_path(), help="Dataset whose test split gives the questions.")
    parser.add_argument("--users", type=int, nargs="+", default=[4, 16])
    parser.add_argument("--duration", default="60s", help="Locust run time per level.")
    parser.add_argument("--think-time", type=float, default=1.0, help="Seconds a user waits between requests, drawn from [0, this].")
    parser.add_argument("--mix", default="ask=6,chat=2,stream=1,bad=1")
    parser.add_argument("--warmup", type=int, default=3, help="Questions asked first and not counted (first-call costs).")
    parser.add_argument("--model-note", default="unspecified", help="Which model was served, for the report.")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/REPORT-loadtest.md"))
    parser.add_argument("--results", type=Path, default=Path("benchmarks/results/loadtest"), help="Where each level's CSV and HTML go.")
    args = parser.parse_args()

    questions = [t.query for t in iter_triplets(args.dataset, split="test")]
    headers = {"Authorization": f"Bearer {settings.serve.api_key}"} if settings.serve.api_key else {}
    httpx.get(f"{args.url}/healthz", timeout=30).raise_for_status()
    for question in questions[: args.warmup]:
        httpx.post(f"{args.url}/v1/ask", json={"query": question}, headers=headers, timeout=300)
    report: dict[str, Any] = {
        "model_note": args.model_note,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "duration": args.duration,
        "think_time": args.think_time,
        "mix": args.mix,
        "questions": len(questions),
        "levels": [],
    }
    for users in args.users:
        out = args.results / f"users-{users}"
        summary = run_loadtest(args.url, users, users, args.duration, out, dataset=args.dataset.resolve(), think_time=args.think_time, mix=args.mix)
        print(f"== {users} users\n{summary.text()}", flush=True)
        html = os.path.relpath(out / "report.html", args.out.parent)
        report["levels"].append({"users": users, "summary": summary.to_dict(), "html": html})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    (args.results / "loadtest.json").write_text(json.dumps(report, indent=2))
    args.out.write_text(markdown(report))


if __name__ == "__main__":
    main()
