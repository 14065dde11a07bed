"""Reliability benchmark of the served application (`soay serve`): how it holds up, not how fast.

Each section is one measurement against a running service; its result is merged into one JSON
file under the section's name, so sections can be run (and rerun) separately:

    .venv/bin/python benchmarks/reliability_bench.py --url http://127.0.0.1:8400 --only fuzz,burst \
        --out benchmarks/results/reliability.json

- fuzz: schemathesis cases of every operation of the served OpenAPI document (loadtest/fuzz.py),
  at least --fuzz-requests of them, every response held to the document; the cases that run the
  whole pipeline are few (--fuzz-pipeline per operation) and sent two at a time, the rest (mostly
  refused with a 4xx) --workers at a time.
- burst: --burst questions sent at once while /healthz of the health port (--health-url) and of the
  application are probed every --probe-every seconds; how the probes fared (a liveness check must keep answering under a burst) and what the questions got.
- rate_limit: a key with a low limit asks faster than it (--limited-key): 429s with Retry-After,
  and the service's own key (--api-key) unaffected.
- log_loss: its own broker, `soay serve` and `soay enlarge`; records across a broker restart, an
  outage and an ingress SIGKILL (benchmarks/log_loss.py). Does not use --url.
- sandbox: escape attempts against the sandbox's OS layer (benchmarks/sandbox_escapes.py).

A section is a function of the Target returning a JSON-able dict, registered with @section(name);
its options, if any, are added in `parse_args`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from loadtest.fuzz import MODES, generate, load_schema, operations, runs_pipeline, send  # noqa: E402

DEFAULT_OUT = Path(__file__).parent / "results" / "reliability.json"
PIPELINE_WORKERS = 2
"""Pipeline cases in flight at once: well under any replica's max_ongoing_requests, so that no
fuzzed question is refused as overload (a 503 would count as a server error)."""
PROGRESS_EVERY = 1000


@dataclass(frozen=True)
class Target:
    """The service under test and the run's options."""

    url: str
    headers: dict[str, str]
    options: argparse.Namespace


Section = Callable[[Target], dict[str, Any]]
SECTIONS: dict[str, Section] = {}


def section(name: str) -> Callable[[Section], Section]:
    def register(run: Section) -> Section:
        SECTIONS[name] = run
        return run

    return register


def say(name: str, line: str) -> None:
    print(f"[{name}] {line}", flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# --- fuzz ---------------------------------------------------------------------------------------

def fuzz_cases(target: Target) -> tuple[list, list]:
    """(pipeline cases, other cases): a fixed number of each pipeline operation's admitted cases,
    then rounds of the others, each with a new seed, until the two make --fuzz-requests. A pair
    (operation, mode) that makes fewer cases than asked has no more to make (a GET without
    parameters has one admitted case and no refused one) and is left out of later rounds."""
    options = target.options
    schema = load_schema(target.url, target.headers)
    pairs = [(op, mode) for op in operations(schema) for mode in MODES]
    pipeline = [c for op, mode in pairs if runs_pipeline(op, mode) for c in generate(op, mode, options.fuzz_pipeline, options.seed)]
    productive = [(op, mode) for op, mode in pairs if not runs_pipeline(op, mode)]
    cheap: list = []
    rounds = 0
    while productive and (wanted := options.fuzz_requests - len(pipeline) - len(cheap)) > 0:
        per_pair = -(-wanted // len(productive))
        made = {(op, mode): generate(op, mode, per_pair, options.seed + rounds) for op, mode in productive}
        cheap += [c for cases in made.values() for c in cases]
        productive = [pair for pair, cases in made.items() if len(cases) == per_pair]
        rounds += 1
        say("fuzz", f"round {rounds}: {len(pipeline) + len(cheap)} cases made")
    return pipeline, cheap


def send_all(target: Target, cases: list, workers: int) -> Iterator:
    """The outcome of every case, `workers` at a time, each thread with its own session."""
    local = threading.local()

    def one(case: Any) -> Any:
        if not hasattr(local, "session"):
            local.session = requests.Session()
        return case.operation.label, send(case, target.url, target.headers, local.session)

    with ThreadPoolExecutor(workers) as pool:
        yield from pool.map(one, cases)


@section("fuzz")
def fuzz(target: Target) -> dict[str, Any]:
    started = time.perf_counter()
    pipeline, cheap = fuzz_cases(target)
    say("fuzz", f"{len(pipeline)} pipeline cases and {len(cheap)} others made in {time.perf_counter() - started:.0f} s; sending")
    statuses: Counter[int] = Counter()
    by_operation: Counter[str] = Counter()
    failures: list[str] = []
    sent_at = time.perf_counter()
    for workers, cases in ((PIPELINE_WORKERS, pipeline), (target.options.workers, cheap)):
        for label, outcome in send_all(target, cases, workers):
            statuses[outcome.status] += 1
            by_operation[label] += 1
            if outcome.failure:
                failures.append(outcome.failure)
            done = statuses.total()
            if done % PROGRESS_EVERY == 0:
                say("fuzz", f"{done}/{len(pipeline) + len(cheap)} requests, {server_errors(statuses)} 5xx, "
                            f"{len(failures)} failures, {time.perf_counter() - sent_at:.0f} s")
    return {
        "requests": statuses.total(), "5xx": server_errors(statuses), "failures": len(failures),
        "seconds": round(time.perf_counter() - started, 1), "sending_seconds": round(time.perf_counter() - sent_at, 1),
        "by_status": {str(s): n for s, n in sorted(statuses.items())}, "by_operation": dict(sorted(by_operation.items())),
        "pipeline_cases": len(pipeline), "seed": target.options.seed, "first_failures": [f[:2000] for f in failures[:5]],
    }


def server_errors(statuses: Counter[int]) -> int:
    return sum(n for status, n in statuses.items() if status >= 500)


# --- burst --------------------------------------------------------------------------------------

async def probe_health(url: str, every_s: float, stop: asyncio.Event) -> list[tuple[int, float, float]]:
    """(status, seconds, wall-clock start) of a /healthz probe started every `every_s` until
    `stop`; each probe is its own task, so a slow answer does not thin the probing."""
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=None)) as client:

        async def one() -> tuple[int, float, float]:
            at, started = time.time(), time.perf_counter()
            try:
                status = (await client.get(f"{url}/healthz")).status_code
            except httpx.HTTPError:
                status = 0
            return status, time.perf_counter() - started, at

        probes = []
        while not stop.is_set():
            probes.append(asyncio.create_task(one()))
            await asyncio.sleep(every_s)
        return list(await asyncio.gather(*probes))


def _probe_in_own_process(url: str, every_s: float, stop: Any, results: Any) -> None:
    """probe_health in a process of its own until `stop` (a multiprocessing Event) is set."""

    async def probing() -> list[tuple[int, float]]:
        stopped = asyncio.Event()

        async def watch() -> None:
            while not stop.is_set():
                await asyncio.sleep(0.01)
            stopped.set()

        watcher = asyncio.create_task(watch())
        probes = await probe_health(url, every_s, stopped)
        await watcher
        return probes

    results.put(asyncio.run(probing()))


async def ask_all(target: Target, questions: list[str]) -> list[tuple[int, float]]:
    """(status, seconds) of each question, all sent at once."""
    async with httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=None)) as client:

        async def one(query: str) -> tuple[int, float]:
            started = time.perf_counter()
            try:
                status = (await client.post(f"{target.url}/v1/ask", json={"query": query}, headers=target.headers)).status_code
            except httpx.HTTPError:
                status = 0
            return status, time.perf_counter() - started

        return list(await asyncio.gather(*(one(q) for q in questions)))


def probe_figures(probes: list[tuple[int, float]]) -> dict[str, Any]:
    """How the health probes sent during a burst fared."""
    latencies = [s for _, s in probes]
    return {
        "probes": len(probes),
        "health_ok_pct": round(100 * sum(status == 200 for status, _ in probes) / len(probes), 2),
        "p50_s": round(statistics.median(latencies), 4), "p99_s": round(percentile(latencies, 0.99), 4), "max_s": round(max(latencies), 4),
        "within_0_5_s_pct": round(100 * sum(status == 200 and s <= 0.5 for status, s in probes) / len(probes), 2),
    }


@section("burst")
def burst(target: Target) -> dict[str, Any]:
    """The burst's figures are those of the health port (--health-url: what a liveness check of
    `soay serve` probes), with the application's own /healthz beside them under `app_healthz`."""
    options = target.options
    examples = [e["question"] for e in httpx.get(f"{target.url}/page.json", timeout=30).json()["examples"]]  # questions it answers
    questions = [examples[n % len(examples)] for n in range(options.burst)]
    probed = {"health_port": options.health_url.rstrip("/"), "app_healthz": target.url} if options.health_url else {"app_healthz": target.url}

    # each prober is a process of its own, as a kubelet is: in the asking process, a probe's time
    # would include the event loop's turns on 200 answers
    spawn = multiprocessing.get_context("spawn")
    stop = spawn.Event()
    probers = {}
    for name, url in probed.items():
        results = spawn.Queue()
        probers[name] = (spawn.Process(target=_probe_in_own_process, args=(url, options.probe_every, stop, results), daemon=True), results)
    say("burst", f"{options.burst} questions at once, {' and '.join(f'{u}/healthz' for u in probed.values())} "
                 f"every {options.probe_every * 1000:.0f} ms, each from a process of its own")
    for process, _ in probers.values():
        process.start()
    time.sleep(2.0)  # their interpreters up and probing before the burst
    began, started = time.time(), time.perf_counter()
    asked = asyncio.run(ask_all(target, questions))
    seconds = time.perf_counter() - started
    stop.set()
    figures = {}
    for name, (process, results) in probers.items():
        figures[name] = probe_figures([(status, s) for status, s, at in results.get(timeout=120) if began <= at <= began + seconds])
        process.join(timeout=30)
    answered = [s for status, s in asked if status == 200]
    main = figures.pop("health_port", None) or figures.pop("app_healthz")
    result = {
        "concurrent": options.burst, "probed": probed.get("health_port", target.url) + "/healthz", **main, **figures,
        "statuses_of_questions": {str(s): n for s, n in sorted(Counter(status for status, _ in asked).items())},
        "questions_seconds": round(seconds, 1),
        "answered_p50_s": round(statistics.median(answered), 3) if answered else None,
    }
    say("burst", json.dumps(result))
    return result


@section("rate_limit")
def rate_limit(target: Target) -> dict[str, Any]:
    """A limited key (`soay keys add NAME --rate R --burst B`, passed as --limited-key) asks faster
    than its rate; what it is let through, and whether the service's other keys are held back."""
    options = target.options
    if not options.limited_key:
        raise SystemExit("rate_limit needs --limited-key: a key made with `soay keys add NAME --rate R --burst B`")
    limited = {"Authorization": f"Bearer {options.limited_key}"}
    statuses: Counter[int] = Counter()
    retry_after: list[int] = []
    others_ok = 0
    started = time.perf_counter()
    with httpx.Client(timeout=30) as client:
        while time.perf_counter() - started < options.limit_seconds:
            response = client.get(f"{target.url}/v1/models", headers=limited)
            statuses[response.status_code] += 1
            if response.status_code == 429:
                retry_after.append(int(response.headers.get("retry-after", "0")))
            others_ok += client.get(f"{target.url}/v1/models", headers=target.headers).status_code == 200
            time.sleep(1 / options.limit_rate)
    seconds = time.perf_counter() - started
    sent = sum(statuses.values())
    result = {
        "asked_per_s": round(sent / seconds, 2), "seconds": round(seconds, 1), "sent": sent,
        "allowed": statuses[200], "allowed_per_s": round(statuses[200] / seconds, 2), "refused_429": statuses[429],
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "retry_after_always_set": bool(retry_after) and min(retry_after) >= 1,
        "other_key_ok_pct": round(100 * others_ok / sent, 2),
    }
    say("rate_limit", json.dumps(result))
    return result


@section("log_loss")
def log_loss(target: Target) -> dict[str, Any]:
    """Starts its own broker, service and enlargement (benchmarks/log_loss.py); --url is not used."""
    from benchmarks.log_loss import run_log_loss

    return run_log_loss(target.options.model, target.options.log_records, log=lambda line: say("log_loss", line))


@section("sandbox")
def sandbox(target: Target) -> dict[str, Any]:
    """Escape attempts against the sandbox's OS layer, run directly (benchmarks/sandbox_escapes.py)."""
    from benchmarks.sandbox_escapes import run_escapes

    return run_escapes()


# --- running ------------------------------------------------------------------------------------

def merge(out: Path, results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The file's sections with these replaced: a section run alone keeps the others."""
    merged = json.loads(out.read_text()) if out.is_file() else {}
    merged.update(results)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(merged, indent=2, ensure_ascii=False) + "\n")
    return merged


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8400")
    parser.add_argument("--api-key", default=os.environ.get("SOAY_SERVE__API_KEY"), help="Bearer key (default $SOAY_SERVE__API_KEY)")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated sections of {', '.join(SECTIONS)}")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--fuzz-requests", type=int, default=10_000, help="fuzz: requests in all")
    parser.add_argument("--fuzz-pipeline", type=int, default=20, help="fuzz: admitted cases of each operation that runs the pipeline")
    parser.add_argument("--workers", type=int, default=4, help="fuzz: requests in flight for the cases that do not run the pipeline")
    parser.add_argument("--burst", type=int, default=200, help="burst: questions sent at once")
    parser.add_argument("--probe-every", type=float, default=0.05, help="burst: seconds between /healthz probes")
    parser.add_argument("--health-url", default="http://127.0.0.1:8401",
                        help="burst: the health port of `soay serve` (serve.health_port), probed beside the app's /healthz; '' for none")
    parser.add_argument("--limited-key", help="rate_limit: a key with a low rate (`soay keys add NAME --rate 2 --burst 5`)")
    parser.add_argument("--limit-rate", type=float, default=10.0, help="rate_limit: requests a second the limited key makes")
    parser.add_argument("--limit-seconds", type=float, default=20.0, help="rate_limit: how long it keeps asking")
    parser.add_argument("--model", type=Path, default=Path("data/aminer/runs/d/model"), help="log_loss: the model its service serves")
    parser.add_argument("--log-records", type=int, default=10_000, help="log_loss: feedback records sent across the faults")
    options = parser.parse_args(argv)
    unknown = set(options.only.split(",")) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; known: {', '.join(SECTIONS)}")
    return options


def main(argv: list[str] | None = None) -> None:
    options = parse_args(argv)
    target = Target(options.url.rstrip("/"), {"Authorization": f"Bearer {options.api_key}"} if options.api_key else {}, options)
    results = {}
    for name in options.only.split(","):
        say(name, f"against {target.url}")
        results[name] = {**SECTIONS[name](target), "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                         "machine": f"{platform.machine()}, {os.cpu_count()} CPUs"}
        merge(options.out, results)  # each section is kept as soon as it is done
    print(f"wrote {', '.join(results)} to {options.out}")


if __name__ == "__main__":
    main()
